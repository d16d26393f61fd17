"""docs/architecture.md's module map is the package as it is: every module listed once, in the
layer the import-layer test (``tests/import_graph.py``) places it in, and no module that is gone.

A new module fails this test until the map names it, so a reader's map never lags the code."""

import re
from pathlib import Path

from tests.import_graph import PACKAGE, layer_of, modules

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| (\w+) \| `tether/([\w/]*)` \| ((?:`\w+` ?)+) \|$", re.M)


def drawn() -> dict[str, str]:
    """module -> the layer the map's table puts it in."""
    section = (ROOT / "docs" / "architecture.md").read_text().split("## Module map", 1)[1]
    found: dict[str, str] = {}
    for layer, package, names in ROW.findall(section.split("\n## ", 1)[0]):
        prefix = ".".join([PACKAGE, *package.strip("/").split("/")]) if package else PACKAGE
        for name in re.findall(r"`(\w+)`", names):
            module = f"{prefix}.{name}"
            assert module not in found, f"{module} is listed twice"
            found[module] = layer
    return found


def test_the_map_lists_every_module_and_only_those():
    real = {name for name, path in modules().items() if path.name != "__init__.py"}
    listed = set(drawn())
    assert sorted(real - listed) == [], "modules missing from docs/architecture.md's map"
    assert sorted(listed - real) == [], "modules in docs/architecture.md's map that are gone"


def test_the_map_puts_each_module_in_its_layer():
    wrong = {module: (layer, layer_of(module)) for module, layer in drawn().items()
             if module in modules() and layer != layer_of(module)}
    assert wrong == {}
