"""Entry script of the PyInstaller bundle: the desktop app (``sapp gui`` without the CLI around it)."""

import sys

from sapp_gui.app import main

if __name__ == "__main__":
    sys.exit(main())
