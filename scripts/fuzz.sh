#!/usr/bin/env bash
# Deep fuzzing (issue 16, docs/limits.md): the fuzz tests under the "deep" profile (SAPP_FUZZ=deep: 230 times the
# CI examples, ~190,000 in all) with the test process capped at SAPP_FUZZ_MEMORY_KB of address space (default
# 4 GiB), so that input that grows without bound ends in a MemoryError failure instead of taking the machine, and
# the whole run capped at SAPP_FUZZ_SECONDS (default 3 h). Extra arguments go to pytest (e.g. a single file).
# SAPP_FUZZ=short runs 20 times the CI examples instead (about 10 minutes of CPU).
#   scripts/fuzz.sh                       # every reader's fuzz test (tests/test_format_*.py, tests/hostile)
#   SAPP_FUZZ=short scripts/fuzz.sh
#   scripts/fuzz.sh tests/test_format_hf.py
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
    set -- tests/test_format_*.py tests/hostile/test_fuzz_*.py
fi
ulimit -v "${SAPP_FUZZ_MEMORY_KB:-4194304}"
export SAPP_FUZZ="${SAPP_FUZZ:-deep}" QT_QPA_PLATFORM=offscreen OPENBLAS_NUM_THREADS=1
# faulthandler_timeout only prints stacks (a deep test runs longer than CI's 300 s on purpose)
exec timeout "${SAPP_FUZZ_SECONDS:-10800}" .venv/bin/python -m pytest -q -p no:cacheprovider \
    -o faulthandler_timeout=0 -k fuzz "$@"
