#!/usr/bin/env bash
# On a GPU machine: the GPU tests, then the benchmarks; logs and results under $OUT (or ./out).
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pytest -m gpu -q -x -p no:cacheprovider "${@:-tests}" 2>&1 | tee "$OUT/gpu-tests.log"
