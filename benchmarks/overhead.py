"""Host cost per call of wrapping an operand and resolving its stream (CuPy, CUDA torch).

Run on a GPU machine: ``python benchmarks/overhead.py``. Writes
``benchmarks/results/overhead-<device>.{json,md}``.
"""

import sys

from _common import environment, host_time_us, write

from accelmath._core.operand import wrap_operand
from accelmath._core.stream import resolve_stream


def main():
    rows = []
    env = environment()
    try:
        import cupy

        x = cupy.zeros((64, 64), cupy.complex64)
        op = wrap_operand(x)
        rows += [
            {"package": "cupy", "what": "accelmath wrap_operand",
             "us": host_time_us(lambda: wrap_operand(x), 20000)},
            {"package": "cupy", "what": "accelmath resolve_stream",
             "us": host_time_us(lambda: resolve_stream(None, op), 20000)},
            {"package": "cupy", "what": "reference: __cuda_array_interface__",
             "us": host_time_us(lambda: x.__cuda_array_interface__, 20000)},
            {"package": "cupy", "what": "reference: get_current_stream().ptr",
             "us": host_time_us(lambda: cupy.cuda.get_current_stream().ptr, 20000)},
        ]
    except ImportError:
        pass
    try:
        import torch

        if torch.cuda.is_available():
            t = torch.zeros((64, 64), dtype=torch.complex64, device="cuda")
            op = wrap_operand(t)
            rows += [
                {"package": "torch", "what": "accelmath wrap_operand",
                 "us": host_time_us(lambda: wrap_operand(t), 20000)},
                {"package": "torch", "what": "accelmath resolve_stream",
                 "us": host_time_us(lambda: resolve_stream(None, op), 20000)},
                {"package": "torch", "what": "reference: __dlpack__()",
                 "us": host_time_us(lambda: t.__dlpack__(), 20000)},
                {"package": "torch", "what": "reference: current_stream().cuda_stream",
                 "us": host_time_us(lambda: torch.cuda.current_stream().cuda_stream, 20000)},
            ]
    except ImportError:
        pass
    table = write("overhead", env, rows, ["package", "what", "us"],
                  "Host time per call, microseconds (median of 5 loops of 20,000 calls).")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
