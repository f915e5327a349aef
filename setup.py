"""The call shim, a C extension built at install time; the rest of the package is described in
pyproject.toml.

The extension is optional: where it cannot be built (no C compiler, no Python headers), the
install goes on without it and accelmath calls C through ctypes instead, with the same results
(``accelmath info`` says which is used).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("accelmath._core._hostcall",
                  [f"accelmath/_core/_shim/{name}.c"
                   for name in ("hostcall", "function", "reader", "exchange", "capsule_stream",
                                "front", "front_parts", "chain", "kernel_call")],
                  depends=["accelmath/_core/_shim/shim.h"], optional=True),
    ],
)
