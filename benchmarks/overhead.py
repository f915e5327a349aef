"""Host cost per call of wrapping an operand and resolving its stream (CuPy, CUDA torch).

Run on a GPU machine: ``python benchmarks/overhead.py``. Writes
``benchmarks/results/overhead-<device>.{json,md}``.
"""

import sys

from _common import environment, host_times_us, write

from accelmath._core.operand import wrap_operand
from accelmath._core.gpu.stream import resolve_stream


def _rows(package, cases):
    times = host_times_us(cases, 20000)
    return [{"package": package, "what": what, "us": us} for what, us in times.items()]


def main():
    rows = []
    env = environment()
    try:
        import cupy

        x = cupy.zeros((64, 64), cupy.complex64)
        op = wrap_operand(x)
        rows += _rows("cupy", {
            "accelmath wrap_operand": lambda: wrap_operand(x),
            "accelmath resolve_stream": lambda: resolve_stream(None, op),
            "reference: __cuda_array_interface__": lambda: x.__cuda_array_interface__,
            "reference: get_current_stream().ptr": lambda: cupy.cuda.get_current_stream().ptr,
        })
    except ImportError:
        pass
    try:
        import torch

        if torch.cuda.is_available():
            t = torch.zeros((64, 64), dtype=torch.complex64, device="cuda")
            op = wrap_operand(t)
            rows += _rows("torch", {
                "accelmath wrap_operand": lambda: wrap_operand(t),
                "accelmath resolve_stream": lambda: resolve_stream(None, op),
                "reference: __dlpack__()": lambda: t.__dlpack__(),
                "reference: current_stream().cuda_stream":
                    lambda: torch.cuda.current_stream().cuda_stream,
            })
    except ImportError:
        pass
    table = write("overhead", env, rows, ["package", "what", "us"],
                  "Host time per call, microseconds: the best of 7 loops of 20,000 calls, the "
                  "cases taking turns loop by loop.")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
