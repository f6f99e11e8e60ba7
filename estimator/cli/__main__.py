"""``python -m estimator.cli``: the ``sapp`` command."""

import sys

from . import main

sys.exit(main())
