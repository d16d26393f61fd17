"""The docs agree with the code: every Python block parses, and README names every job state."""

import ast
import re
from pathlib import Path

import pytest

from tether import JobState

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)


def python_blocks():
    for page in PAGES:
        text = page.read_text()
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 2
            yield pytest.param(m.group(1), id=f"{page.relative_to(ROOT)}:{line}")


@pytest.mark.parametrize("code", list(python_blocks()))
def test_every_python_block_parses(code):
    """``...`` stands for what a block leaves out, where an expression may stand."""
    ast.parse(code)


def test_the_readme_lists_every_job_state():
    readme = (ROOT / "README.md").read_text()
    states = readme.split("- **Job states**", 1)[1].split("\n- ", 1)[0]
    named = set(re.findall(r"[a-z_]+", states.split(":", 1)[1]))
    assert {str(s) for s in JobState} <= named
