"""``python -m iwr_bench`` runs the ``iwr`` command line."""

import sys

from iwr_bench.cli import main

sys.exit(main())
