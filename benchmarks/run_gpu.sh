#!/usr/bin/env bash
# On a GPU machine: the GPU tests, then the benchmarks; logs and results under $OUT (or ./out).
# Wheels in .whl/ (see docs/benchmarks.md: nvmath-python, the published SFFT code and its needs, dask)
# are installed first, to benchmark beside them.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
# The call shim, built in place as an install would (no network here); where setuptools is
# missing or older than pyproject.toml needs, with the compiler directly. Where neither works,
# accelmath calls through ctypes: hostcall.log says which, then how the build went.
python3 setup.py build_ext --inplace -q > /tmp/hostcall-build.log 2>&1
if ! python3 -c "import accelmath._core._hostcall" 2>/dev/null; then
    read -r include suffix < <(python3 -c \
        'import sysconfig as s; print(s.get_paths()["include"], s.get_config_var("EXT_SUFFIX"))')
    # (every C source of the shim, as setup.py lists them)
    ${CC:-cc} -O2 -shared -fPIC -I"$include" accelmath/_core/_*.c \
        -o "accelmath/_core/_hostcall$suffix" >> /tmp/hostcall-build.log 2>&1
fi
{ python3 -c "from accelmath._core import hostcall; print(hostcall.status())"
  echo "--- build:"; tail -20 /tmp/hostcall-build.log; } > "$OUT/hostcall.log" 2>&1
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
python3 -m pytest -m gpu -q -p no:cacheprovider "${@:-tests}" 2>&1 | tail -40 > "$OUT/gpu-tests.log"
python3 examples/plan_reuse.py > "$OUT/example.log" 2>&1
python3 examples/solvers.py > "$OUT/example-solvers.log" 2>&1
python3 examples/matmul_epilogue.py > "$OUT/example-matmul.log" 2>&1
for bench in overhead fft r2c_layouts first_call cpu solvers matmul image_subtraction \
             image_subtraction_many; do
    python3 "benchmarks/$bench.py" > "$OUT/$bench.log" 2>&1
done
# one archive: the device tool returns a few files only
tar -czf "$OUT/results.tgz" -C benchmarks results
