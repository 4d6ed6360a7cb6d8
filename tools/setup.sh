#!/usr/bin/env bash
# Creates .venv (if missing) and installs gaugedyn with its test tools.
# sympy is pinned because derivations/ and the generated kernels are its byte-exact output.
# Last, the package's numba kernels are compiled into numba's cache (tools/warm_kernels.py, about
# a minute of CPU): the tests and the first runs load them instead of compiling them.
# torch: a torch already installed in .venv is kept (any build: CPU, CUDA, ROCm). Otherwise
# torch==2.13.0 is installed from pip's configured index; from PyPI on Linux that is the CUDA
# build (several GB). For the CPU build, install it first:
#   .venv/bin/python -m pip install torch --index-url https://download.pytorch.org/whl/cpu
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  "${PIP[@]}" torch==2.13.0
fi
"${PIP[@]}" sympy==1.14.0
"${PIP[@]}" -e '.[test]'
.venv/bin/python tools/warm_kernels.py
