#!/usr/bin/env bash
# Register a built bundle with the desktop (menu entry + icon) for the current user.
#   build/dist/sapp-planner/install-desktop-entry.sh   (run from inside the bundle folder or give its path)
set -euo pipefail
bundle="$(cd "${1:-$(dirname "$0")}" && pwd)"
apps="${XDG_DATA_HOME:-$HOME/.local/share}/applications"
icons="${XDG_DATA_HOME:-$HOME/.local/share}/icons/hicolor/256x256/apps"
mkdir -p "$apps" "$icons"
cp "$bundle/sapp-planner.png" "$icons/sapp-planner.png"
sed -e "s|^Exec=.*|Exec=\"$bundle/sapp-planner\" %F|" "$bundle/sapp-planner.desktop" > "$apps/sapp-planner.desktop"
echo "installed $apps/sapp-planner.desktop (runs $bundle/sapp-planner)"
