#!/usr/bin/env bash
# Creates .venv (if missing) and installs gaugedyn with its test tools.
# sympy is pinned because derivations/ and the generated kernels are its byte-exact output.
# torch is pinned to the 2.13.0 CPU wheel first, so pip never pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check torch==2.13.0 sympy==1.14.0
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
