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
test -s "$out" || { echo "smoke.sh: no screenshot at $out" >&2; exit 1; }
# the Search tab in Chinese: a search in a worker process of the frozen app, and the bundled translation
search_out=build/smoke_search_zh.png
rm -f "$search_out"
QT_QPA_PLATFORM=offscreen SAPP_CONFIG_DIR="$config" timeout 180 \
  "$bundle/sapp-planner" "$example" --screenshot "$search_out" --size 1400x900 --tab search --language zh_CN
test -s "$search_out" || { echo "smoke.sh: no screenshot at $search_out" >&2; exit 1; }
test -f "$bundle/_internal/sapp_gui/i18n/sapp_zh_CN.qm" || { echo "smoke.sh: the bundle has no translation" >&2; exit 1; }
rm -rf "$config"
echo "smoke.sh: ok, $out ($(stat -c %s "$out") bytes), $search_out ($(stat -c %s "$search_out") bytes)"
