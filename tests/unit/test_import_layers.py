"""tether's imports point one way (core <- store <- job <- worker <- app <- interfaces, providers
beside core) and never form a loop, counting imports inside functions and under TYPE_CHECKING.
The graph is read from the source by ``tests/import_graph.py``."""

from __future__ import annotations

from pathlib import Path

from tests.import_graph import cycles, imports, layer_of, modules, upward

# Known cases to be removed; empty today, and kept so that an exception is explicit.
ALLOWED_CYCLES: list[set[str]] = []
ALLOWED_UPWARD: set[tuple[str, str]] = set()


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)  # raises KeyError naming the module


def test_no_import_cycle_but_the_known_ones() -> None:
    found = [set(c) for c in cycles(imports())]
    assert [c for c in found if c not in ALLOWED_CYCLES] == []
    assert [c for c in ALLOWED_CYCLES if c not in found] == [], \
        "an allowed cycle is gone: remove it from ALLOWED_CYCLES"


def test_no_import_from_a_higher_layer() -> None:
    found = set(upward(imports()))
    assert sorted(found - ALLOWED_UPWARD) == []
    assert sorted(ALLOWED_UPWARD - found) == [], "remove the fixed ones from ALLOWED_UPWARD"


def _package(root: Path, files: dict[str, str]) -> Path:
    src = root / "tether"
    for name, text in files.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return src


def test_the_walker_sees_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    src = _package(tmp_path, {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/states.py": "def f():\n    from ..job import context\n",
        "job/__init__.py": "",
        "job/context.py": ("from typing import TYPE_CHECKING\n"
                           "if TYPE_CHECKING:\n    from ..worker.executor import run\n"),
        "worker/__init__.py": "",
        "worker/executor.py": "import tether.core.states\nfrom ..job.context import x\n",
    })
    graph = imports(src)
    assert graph["tether.core.states"] == {"tether.job.context"}
    assert graph["tether.worker.executor"] == {"tether.core.states", "tether.job.context"}
    assert cycles(graph) == [["tether.core.states", "tether.job.context",
                              "tether.worker.executor"]]
    assert upward(graph) == [("tether.core.states", "tether.job.context"),
                             ("tether.job.context", "tether.worker.executor")]


def test_rest_and_mcp_share_only_the_wire() -> None:
    """REST and MCP are two doors of one house: each imports ``tether.wire`` and the facade,
    never the other, and ``wire`` imports no interface."""
    def package(module: str) -> str:
        return module.split(".")[1] if module.count(".") else module

    crossings = sorted((a, b) for a, targets in imports().items() for b in targets
                       if {package(a), package(b)} == {"api", "mcp"}
                       or (package(a) == "wire" and layer_of(b) == "interfaces"
                           and package(b) != "wire"))
    assert crossings == []
