"""``python -m orchestration.cli``: the ``tidemark`` command, for subprocesses and tests that run it
without the console script."""

import sys

from orchestration.cli.tidemark import main

sys.exit(main())
