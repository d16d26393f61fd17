"""The ``tether`` command line: ``tether.cli.main:main`` is the console script."""
