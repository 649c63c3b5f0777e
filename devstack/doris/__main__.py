"""``python -m devstack.doris`` — see :func:`devstack.doris.main`."""

import sys

from devstack.doris import main

sys.exit(main())
