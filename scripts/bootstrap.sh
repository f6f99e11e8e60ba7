#!/usr/bin/env bash
# Set up SAPP Planner on a fresh Debian/Ubuntu machine: the system packages Python and Qt need,
# a virtual environment in .venv and the project installed into it (editable).
#   scripts/bootstrap.sh          runtime (CLI + desktop app)
#   scripts/bootstrap.sh --dev    also the test and lint tools
#   scripts/bootstrap.sh --package  also PyInstaller (packaging/build.sh)
# Idempotent: packages already present are not reinstalled; an existing .venv is reused.
set -euo pipefail
cd "$(dirname "$0")/.."

extras="gui"
for arg in "$@"; do
  case "$arg" in
    --dev) extras="$extras,dev" ;;
    --package) extras="$extras,package" ;;
    *) echo "bootstrap.sh: unknown option $arg (use --dev or --package)" >&2; exit 2 ;;
  esac
done

# System packages: venv support for Debian's own Python, the libraries Qt loads even offscreen, and a CJK font
# (WenQuanYi Micro Hei, 5 MB) so the Chinese interface does not render as boxes.
apt_packages=(python3-venv python3-pip libgl1 libegl1 libfontconfig1 fonts-dejavu-core fonts-wqy-microhei libglib2.0-0
              libdbus-1-3 libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-image0
              libxcb-keysyms1 libxcb-render-util0 libxcb-shape0)
if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  missing=()
  for pkg in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  # python3-venv only matters when the interpreter cannot create a venv by itself.
  if python3 -c "import venv, ensurepip" 2>/dev/null; then
    filtered=()
    for pkg in "${missing[@]}"; do
      [[ "$pkg" == python3-venv || "$pkg" == python3-pip ]] || filtered+=("$pkg")
    done
    missing=("${filtered[@]+"${filtered[@]}"}")
  fi
  if [ "${#missing[@]}" -gt 0 ]; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
      if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "bootstrap.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; fi
    fi
    echo "Installing system packages: ${missing[*]}"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
else
  echo "bootstrap.sh: not a Debian-like system; install python3-venv and Qt's libGL/libEGL/fontconfig yourself" >&2
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -c requirements/constraints.txt -e ".[${extras}]"
