"""``load_app("module:attr")``: find the ``Tether`` instance a worker, server or CLI runs.

The spec names a module on the path (the working directory is added, as ``python -m`` would)
or a file (``path/to/jobs.py:app``); the attribute defaults to ``app``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from .app import Tether
from .errors import ConfigurationError


def load_app(spec: str) -> Tether:
    """``module:attr`` (or a path ``file.py:attr``) to a Tether instance."""
    module_name, _, attr = spec.partition(":")
    attr = attr or "app"
    if module_name.endswith(".py"):
        path = Path(module_name).resolve()
        mod_spec = importlib.util.spec_from_file_location(path.stem, path)
        if mod_spec is None or mod_spec.loader is None:
            raise ConfigurationError(f"cannot load {module_name}")
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[path.stem] = module
        mod_spec.loader.exec_module(module)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigurationError(f"cannot import {module_name!r}: {exc}") from exc
    app = getattr(module, attr, None)
    if not isinstance(app, Tether):
        raise ConfigurationError(f"{spec} is not a tether.Tether instance")
    return app


def app_at(app_spec: str | None, database_url: str | None, *,
           create_database: bool) -> Tether:
    """The app an interface runs: the one ``app_spec`` names (``TETHER_DATABASE_URL`` is set
    first, so a module-level ``Tether()`` reads it too), or a bare one, on ``database_url``
    when given. ``create_database`` False: it opens an existing tether database only
    (``NoDatabase`` otherwise), as the read-only interfaces must."""
    if app_spec is None:
        app = Tether(database_url)
    else:
        if database_url:
            os.environ["TETHER_DATABASE_URL"] = database_url
        app = load_app(app_spec)
        if database_url:
            app.database_url = database_url
    app.create_database = create_database
    return app
