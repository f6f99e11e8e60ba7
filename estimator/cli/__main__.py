"""``python -m estimator.cli``: the ``sapp`` command."""

import sys

from . import main

if __name__ == "__main__":  # importing this module (a packager walking the package) runs nothing
    sys.exit(main())
