"""The ``tidemark`` command line and the development tooling it starts.

``tidemark.py`` is the parser (the console script ``tidemark`` and ``python -m orchestration.cli``);
the other modules are the commands' halves that need more than a few lines, and the processes
``tidemark dev`` launches (``python -m orchestration.cli.dagster_daemon``, ``python -m
orchestration.cli.dev_watchdog``). The CLI imports the Dagster definitions (``orchestration/defs/``)
and, lazily, ``devstack``; production code imports neither this package nor ``devstack``.
"""
