#!/usr/bin/env bash
# Build the SAPP Planner desktop app as a PyInstaller one-folder bundle (Linux x86-64).
#   packaging/build.sh            -> build/dist/sapp-planner/sapp-planner (+ .desktop entry and icon)
# Needs PyInstaller in the venv: scripts/bootstrap.sh --package (or pip install -e '.[gui,package]').
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
if ! "$PY" -m PyInstaller --version >/dev/null 2>&1; then
  echo "build.sh: PyInstaller is not installed for $PY; run scripts/bootstrap.sh --package" >&2
  exit 1
fi
start=$SECONDS
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath build/dist --workpath build/pyinstaller packaging/sapp-planner.spec
bundle=build/dist/sapp-planner
cp packaging/sapp-planner.desktop "$bundle/"
cp resources/icons/sapp-planner.png "$bundle/sapp-planner.png"
cp packaging/install-desktop-entry.sh "$bundle/"
echo "build.sh: built $bundle/sapp-planner in $((SECONDS - start)) s ($(du -sh "$bundle" | cut -f1))"
