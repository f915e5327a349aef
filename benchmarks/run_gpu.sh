#!/usr/bin/env bash
# On a GPU machine: the GPU tests, then the benchmarks; logs and results under $OUT (or ./out).
# A nvmath-python wheel in .whl/ (see the README) is installed first, to benchmark beside it.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
python3 -m pytest -m gpu -q -p no:cacheprovider "${@:-tests}" 2>&1 | tail -40 > "$OUT/gpu-tests.log"
python3 examples/plan_reuse.py > "$OUT/example.log" 2>&1
for bench in overhead fft r2c_layouts; do
    python3 "benchmarks/$bench.py" > "$OUT/$bench.log" 2>&1
done
# one archive: the device tool returns a few files only
tar -czf "$OUT/results.tgz" -C benchmarks results
