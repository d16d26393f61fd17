"""The docs agree with the code: every Python block parses, README names every job state, and
docs/design.md draws exactly the engine's transition table."""

import ast
import itertools
import re
from pathlib import Path

import pytest

from tether import JobState
from tether.core.states import TRANSITIONS

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


def drawn_edges(block: str) -> set[tuple[str, str]]:
    """Each line's leading ``a -> b | c -> d`` chain, up to the first word that is no state."""
    states = {str(s) for s in JobState}
    edges = set()
    for line in block.splitlines():
        groups: list[list[str]] = [[]]
        for word in line.split():
            if word == "->":
                groups.append([])
            elif word != "|" and word in states:
                groups[-1].append(word)
            elif word != "|":
                break
        for a, b in itertools.pairwise(groups):
            edges |= {(x, y) for x in a for y in b}
    return edges


def test_the_design_draws_the_engine_s_transition_table():
    design = (ROOT / "docs" / "design.md").read_text()
    section = design.split("## The job state machine", 1)[1]
    block = section.split("```", 2)[1]
    table = {(str(a), str(b)) for a, targets in TRANSITIONS.items() for b in targets}
    assert drawn_edges(block) == table


def test_the_api_reference_documents_exactly_the_public_names():
    """docs/reference.md is where mkdocstrings renders the docstrings (``./dev docs``)."""
    import tether

    reference = (ROOT / "docs" / "reference.md").read_text()
    documented = re.findall(r"^::: tether\.(\w+)$", reference, re.M)
    assert sorted(documented) == sorted(tether.__all__)
    assert len(documented) == len(set(documented))


def test_the_site_lists_every_page_and_builds_strictly_offline():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["strict"] is True and config["theme"]["font"] is False

    def pages(nav):
        for item in nav:
            for value in item.values():
                yield from pages(value) if isinstance(value, list) else [value]

    listed = sorted(pages(config["nav"]))
    on_disk = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    assert listed == on_disk
