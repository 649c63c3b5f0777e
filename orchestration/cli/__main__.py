"""``python -m orchestration.cli``: the ``tidemark`` command, for subprocesses and tests that run it
without the console script (ending as the script does: ``orchestration/cli/tidemark.py:cli``)."""

from orchestration.cli.tidemark import cli

cli()
