"""The facade's parts follow one rule (docs/architecture.md, "Facade parts"): each is a class in
``facade/<concept>.py`` named for its module and ending in ``Part``, ``Tether`` inherits every
one of them and nothing else, none is a public name, and each reaches the app through
``FacadeHost`` (``facade/host.py``) instead of declaring the app's members again."""

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import tether
import tether.facade
from tether.app import Tether
from tether.facade.host import FacadeHost


def facade_classes() -> dict[str, list[type]]:
    """module name -> the classes it defines."""
    found = {}
    for info in pkgutil.iter_modules(tether.facade.__path__):
        module = importlib.import_module(f"tether.facade.{info.name}")
        found[info.name] = [c for _, c in inspect.getmembers(module, inspect.isclass)
                            if c.__module__ == module.__name__]
    return found


def parts() -> dict[str, type]:
    return {module: cls for module, classes in facade_classes().items()
            for cls in classes if cls.__name__.endswith("Part")}


def test_each_part_is_named_for_its_module() -> None:
    named = {module: cls.__name__ for module, cls in parts().items()}
    assert named, "no facade part found"
    assert {m: n for m, n in named.items()
            if n.lower() != m.replace("_", "") + "part"} == {}


def test_a_module_holds_one_part_at_most() -> None:
    counts = {module: sum(c.__name__.endswith("Part") for c in classes)
              for module, classes in facade_classes().items()}
    assert {m: n for m, n in counts.items() if n > 1} == {}


def test_tether_inherits_every_part_and_only_parts() -> None:
    assert set(Tether.__bases__) == set(parts().values())


def test_no_part_is_public() -> None:
    assert {cls.__name__ for cls in parts().values()} & set(tether.__all__) == set()


def test_every_part_is_typed_against_the_host() -> None:
    assert [cls.__name__ for cls in parts().values() if FacadeHost not in cls.__bases__] == []


def test_no_part_declares_the_apps_members_again() -> None:
    """The stubs ``facade/host.py`` replaced: a class body with an ``if TYPE_CHECKING:``."""
    stubs = []
    for path in Path(tether.facade.__path__[0]).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                stubs += [f"{path.name}:{node.name}" for item in node.body
                          if isinstance(item, ast.If) and "TYPE_CHECKING" in ast.unparse(item.test)]
    assert stubs == []
