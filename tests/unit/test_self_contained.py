"""The repository explains itself: what it ships and documents cites only files in the tree.

A reader of src/, the migrations, README.md, CHANGELOG.md or docs/ cannot follow a tracker
number, a working session, a benchmark run's letter or a workload's internal label, nor a
design document that is not in the repository; docs/design.md is the design, and bench/README.md
names its workloads. Each pattern below is one kind of such citation.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CITATIONS = {
    "an outside design document": re.compile(r"\bDESIGN\b"),
    "a tracker number": re.compile(r"(?i)\bissues? #?\d+"),
    "a pull request or issue by number": re.compile(r"(?<![\w&/.(])#\d+\b(?!-)"),
    "a working session": re.compile(r"(?i)\bsessions? \d+"),
    "a benchmark run's letter": re.compile(r"\b[Rr]uns? [A-Z]\b(?![/\w])"),
    "a workload's internal label": re.compile(r"\bW\d{1,2}\b"),
}
TEXT = {".py", ".sql", ".md", ".toml", ".html", ".js", ".css", ".dot", ".txt", ".yml"}
STYLED = {".html", ".js", ".css", ".dot"}
"""Where ``#123456`` is a colour, not a number."""


def shipped_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "mkdocs.yml"]
    for top in ("src", "docs"):
        files += [p for p in (ROOT / top).rglob("*")
                  if p.suffix in TEXT and "vendor" not in p.parts and p.is_file()]
    return sorted(p for p in files if p.exists())


def citations(text: str, suffix: str = ".md") -> list[str]:
    kinds = {kind: pattern for kind, pattern in CITATIONS.items()
             if not (suffix in STYLED and kind.startswith("a pull request"))}
    return [f"{kind}: {m.group(0)!r} in {text[max(0, m.start() - 40):m.end() + 40]!r}"
            for kind, pattern in kinds.items() for m in pattern.finditer(text)]


@pytest.mark.parametrize("path", shipped_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_cites_only_the_repository(path):
    assert citations(path.read_text(), path.suffix) == []


@pytest.mark.parametrize("text", [
    "see DESIGN §4", "(issue 25, bench W10)", "fixed in #123", "session 11 measured",
    "bench/README run Z", "Runs A to Z", "as issues 21, 23 found",
])
def test_each_kind_of_citation_is_caught(text):
    assert citations(text)


@pytest.mark.parametrize("text", [
    "docs/design.md, the state machine", "[durable](guarantees.md#1-durable)",
    "runs a worker", "interleaved A/B runs", "a W-shaped curve",
])
def test_the_repository_s_own_words_pass(text):
    assert citations(text) == []


def test_a_colour_is_not_a_number():
    assert citations("--muted: #687182;", ".css") == []
    assert citations("--muted: #687182;", ".md")


CITED_FILE = re.compile(r"\b((?:docs|bench|tests|examples)/[\w/.-]+\.(?:md|py|dot|json))\b")
CITED_SECTION = re.compile(r"docs/(\w+)\.md,\s+\"([^\"]+)\"")


def absent(text: str) -> list[str]:
    """What ``text`` cites that is not in the tree: a file (``docs/x.md``, ``tests/...py``), or
    a section named after a page (``docs/design.md, "Leases"``) that begins none of its
    headings."""
    gone = sorted({name for name in CITED_FILE.findall(text) if not (ROOT / name).exists()})
    for page, section in CITED_SECTION.findall(text):
        target = ROOT / "docs" / f"{page}.md"
        headings = re.findall(r"^#+ (.+)$", target.read_text(), re.M) if target.exists() else []
        if not any(h.startswith(section) for h in headings):
            gone.append(f"docs/{page}.md, {section!r}")
    return gone


@pytest.mark.parametrize("path", shipped_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_what_it_cites_is_in_the_tree(path):
    assert absent(path.read_text()) == []


def test_a_citation_of_what_is_not_there_is_caught():
    assert absent('docs/nowhere.md; docs/design.md, "No such section"; tests/x/y.py') == [
        "docs/nowhere.md", "tests/x/y.py", "docs/design.md, 'No such section'"]
    assert absent('docs/design.md, "Leases, workers"; docs/guarantees.md') == []
