"""The facade's parts follow one naming rule (docs/architecture.md, "Facade parts"): each is a
class in ``facade/<concept>.py`` named for its module and ending in ``Part``, ``Tether``
inherits every one of them and nothing else, and none is a public name."""

import importlib
import inspect
import pkgutil

import tether
import tether.facade
from tether.app import Tether


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
