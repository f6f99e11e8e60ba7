"""The user's config folder, shared by the CLI and the desktop app: device presets (``presets/``) and family
profiles (``profiles/``) of the shipped shapes, and calibration profiles (``calibrations/``, ``sapp calibrate``).

``$SAPP_CONFIG_DIR`` wins; otherwise the folder Qt's ``AppConfigLocation`` names for the app (organisation
``sapp-planner``, application ``SAPP Planner``), computed here without Qt so the CLI finds the same files:
``$XDG_CONFIG_HOME`` (or ``~/.config``) on Linux, ``~/Library/Preferences`` on macOS, ``%LOCALAPPDATA%`` on
Windows, each followed by ``sapp-planner/SAPP Planner``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ORGANIZATION = "sapp-planner"
APPLICATION = "SAPP Planner"


def user_config_dir() -> Path:
    override = os.environ.get("SAPP_CONFIG_DIR")
    if override:
        return Path(override)
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Preferences"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / ORGANIZATION / APPLICATION


def user_presets_dir() -> Path:
    return user_config_dir() / "presets"


def user_profiles_dir() -> Path:
    return user_config_dir() / "profiles"


def calibrations_dir() -> Path:
    """Calibration profiles written by ``sapp calibrate`` (beside the presets)."""
    return user_config_dir() / "calibrations"


def user_kinds_dir() -> Path:
    return user_config_dir() / "kinds"


def register_user_kinds(folder: Path | None = None) -> str:
    """Make the user's layer kinds and slot overrides (estimator/kinds) take part in every estimate; returns why
    they could not ("" when they could): a broken kind file is named and the folder left out."""
    from .errors import ConfigError
    from .kinds import add_kinds_dir

    try:
        add_kinds_dir(folder or user_kinds_dir(), "user")
    except ConfigError as exc:
        return f"user layer kinds ignored: {exc}"
    return ""


def register_user_profiles(folder: Path | None = None) -> str:
    """Make the user's family profiles take part in every estimate; returns why they could not ("" when they
    could). The folder need not exist yet (a profile saved later is read). A broken profile file is named, and
    the folder is left out rather than making every config fail."""
    from .errors import ConfigError
    from .profiles import add_profile_dir

    folder = folder or user_profiles_dir()
    try:
        add_profile_dir(folder)
    except ConfigError as exc:
        return f"user profiles ignored: {exc}"
    return ""
