"""The demo's question-generation pipeline, under its checkout name.

It lives in the package (``tether.examples.pipeline``) so that ``tether demo`` runs from a plain
``pip install tether``; this module re-exports it, so ``--app examples.pipeline:app`` and
``tether.examples.pipeline:app`` name the same app.

Run it:  tether worker --app examples.pipeline:app
"""

from tether.examples.pipeline import *  # noqa: F401,F403
