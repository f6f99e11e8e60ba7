#!/usr/bin/env bash
# Packaging smoke test: build the one-folder bundle, start the built binary offscreen with --screenshot on
# an example shipped inside the bundle, and require the PNG. Exit status: 0 ok, non-zero otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
packaging/build.sh
bundle=build/dist/sapp-planner
example="$bundle/_internal/resources/examples/deepseek_v3_671b.plan.yaml"
test -f "$example" || { echo "smoke.sh: the bundle has no examples ($example)" >&2; exit 1; }
out=build/smoke.png
rm -f "$out"
config="$(mktemp -d)"
QT_QPA_PLATFORM=offscreen SAPP_CONFIG_DIR="$config" timeout 180 \
  "$bundle/sapp-planner" "$example" --screenshot "$out" --size 1280x800
rm -rf "$config"
test -s "$out" || { echo "smoke.sh: no screenshot at $out" >&2; exit 1; }
echo "smoke.sh: ok, $out ($(stat -c %s "$out") bytes)"
