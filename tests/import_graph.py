"""tether's import graph, read from the source with ``ast``, and the layers it must respect.

Every ``import`` and ``from ... import`` counts, wherever it is written: at the top, inside a
function, under ``if TYPE_CHECKING:``. An import inside a function still ties the two modules
together; it only hides the tie from a reader. Importing a module runs its parent packages'
``__init__`` too; those implicit edges are left out (every module would otherwise import
``tether/__init__.py`` and with it everything), explicit imports of a package are kept.

    python -m tests.import_graph [--src src/tether] [--packages] [--out FILE.dot]

writes the graph as Graphviz ``.dot`` (modules, or with ``--packages`` one node per layer
package), coloured by layer; ``docs/architecture.md`` shows the graphs before and after the
job package was untangled.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

PACKAGE = "tether"
SRC = Path(__file__).resolve().parent.parent / "src" / PACKAGE

LAYERS = ("core", "providers", "store", "job", "worker", "app", "interfaces")
"""Lowest first. A module may import its own layer and the layers below it, never above.
``providers`` sits beside ``core``: it may use core, and only the job layer and above use it.
The package itself (``tether/__init__.py``, the public names) is part of the facade."""

_PLACES: dict[str, str] = {
    # core: pure logic, the error tree, records and job types; no I/O of their own
    "core": "core", "errors": "core", "clock": "core", "records": "core", "fleet": "core", "wakeup": "core",
    "registry": "core", "tokens": "core", "optional": "core", "tracing": "core",
    "providers": "providers",
    "store": "store", "blobs": "store",
    "job": "job", "context": "job", "checkpoint": "job",  # the last two: before tether/job
    "worker": "worker",
    "app": "app", "submission": "app", "loader": "app", "facade": "app",
    "wire": "interfaces",  # what the interfaces share: below each of them, above the facade
    "api": "interfaces", "cli": "interfaces", "mcp": "interfaces", "dashboard": "interfaces",
    "demo": "interfaces", "examples": "interfaces", "testing": "interfaces", "worker.__main__": "interfaces",
    "integrations": "interfaces",
}


def layer_of(module: str) -> str:
    """The layer of ``tether.x.y``: the longest entry of ``_PLACES`` naming it or a parent."""
    if module == PACKAGE:
        return "app"
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):
        place = _PLACES.get(".".join(parts[:n]))
        if place is not None:
            return place
    raise KeyError(f"{module} has no layer: add it to _PLACES in tests/import_graph.py")


def modules(src: Path = SRC) -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    found = {}
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(src: Path = SRC) -> dict[str, set[str]]:
    """module -> the package's modules it imports (anywhere in its text)."""
    known = modules(src)
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        targets: set[str] = set()
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(module, path.name == "__init__.py", node)
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                         for a in node.names]
            else:
                continue
            for name in names:
                while name and name not in known:  # ``import a.b.c``: the deepest module
                    name = name.rpartition(".")[0]
                if name.startswith(PACKAGE) and name != module:
                    targets.add(name)
        graph[module] = targets
    return graph


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import of a module from a higher layer (``providers`` counts as above core)."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    return sorted((a, b) for a, targets in graph.items() for b in targets
                  if rank[layer_of(b)] > rank[layer_of(a)])


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


_COLOURS = {"core": "#e8f0fe", "providers": "#e6f4ea", "store": "#fef7e0", "job": "#fce8e6",
            "worker": "#f3e8fd", "app": "#e0f7fa", "interfaces": "#f1f3f4"}


def _package_of(module: str) -> str:
    """``tether.job.calls`` -> ``tether.job``; top-level modules, and a module placed in
    another layer than its package (``tether.worker.__main__``), stay themselves."""
    package = ".".join(module.split(".")[:2])
    return package if layer_of(package) == layer_of(module) else module


def to_dot(graph: dict[str, set[str]], *, packages: bool = False, title: str = "") -> str:
    """Graphviz text: one node per module (or package), edges importer -> imported; edges
    inside a cycle are red, upward imports dashed."""
    if packages:
        merged: dict[str, set[str]] = {}
        for a, targets in graph.items():
            pa = _package_of(a)
            merged.setdefault(pa, set()).update(_package_of(b) for b in targets
                                                if _package_of(b) != pa)
        graph = merged
    in_cycle = {m for c in cycles(graph) for m in c}
    up = set(upward(graph))
    lines = ["digraph tether {", f'  label="{title}"; labelloc=t;' if title else "",
             "  rankdir=BT; node [shape=box, style=filled, fontname=Helvetica, fontsize=10];"]
    for layer in LAYERS:
        members = sorted(m for m in graph if layer_of(m) == layer)
        if not members:
            continue
        lines.append(f"  subgraph cluster_{layer} {{ label={layer}; style=dashed;")
        for m in members:
            lines.append(f'    "{m}" [fillcolor="{_COLOURS[layer]}"];')
        lines.append("  }")
    for a in sorted(graph):
        for b in sorted(graph[a]):
            attrs = []
            if a in in_cycle and b in in_cycle:
                attrs.append("color=red")
            if (a, b) in up:
                attrs.append("style=dashed")
            lines.append(f'  "{a}" -> "{b}"' + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    lines.append("}")
    return "\n".join(line for line in lines if line) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.import_graph")
    parser.add_argument("--src", type=Path, default=SRC, help="the package's folder")
    parser.add_argument("--packages", action="store_true", help="one node per package")
    parser.add_argument("--title", default="")
    parser.add_argument("--out", type=Path, default=None, help="write here (default: stdout)")
    args = parser.parse_args(argv)
    graph = imports(args.src)
    text = to_dot(graph, packages=args.packages, title=args.title)
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    found = cycles(graph)
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports, "
          f"{len(found)} cycles ({sum(map(len, found))} modules), "
          f"{len(upward(graph))} upward imports", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
