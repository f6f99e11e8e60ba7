"""Entry script of the PyInstaller bundle: the desktop app (``sapp gui`` without the CLI around it)."""

import multiprocessing
import sys

if __name__ == "__main__":
    # the search and balance run in worker processes (fork server): in a frozen app the bootstrap of those
    # processes goes through here, before any GUI import
    multiprocessing.freeze_support()
    from sapp_gui.app import main

    sys.exit(main())
