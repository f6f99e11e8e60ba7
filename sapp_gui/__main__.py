"""``python -m sapp_gui [FILE...] [--screenshot OUT.png]``."""

import sys

from sapp_gui.app import main

sys.exit(main())
