#!/usr/bin/env bash
# A separate virtual environment for `sapp measure` and its tests: the project with the `measure` extra
# (torch==2.13.0, the CPU build where pip finds it, and transformers) in .venv-measure. The core .venv never
# gets PyTorch. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-measure/bin/python ]; then
  python3 -m venv .venv-measure
fi
.venv-measure/bin/python -m pip install -q --disable-pip-version-check -c requirements/constraints.txt \
  -e ".[measure]" pytest
