"""tether's benchmark harness: ``python -m bench.run`` (see bench/README.md)."""
