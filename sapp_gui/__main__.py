"""``python -m sapp_gui [FILE...] [--screenshot OUT.png]``."""

import sys

from sapp_gui.app import main

if __name__ == "__main__":  # a worker process imports this module too (multiprocessing): it must not start an app
    sys.exit(main())
