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
                  ["accelmath/_core/_hostcall.c", "accelmath/_core/_function.c",
                   "accelmath/_core/_reader.c", "accelmath/_core/_exchange.c",
                   "accelmath/_core/_capsule_stream.c",
                   "accelmath/_core/_front.c",
                   "accelmath/_core/_front_parts.c", "accelmath/_core/_chain.c",
                   "accelmath/_core/_kernel_call.c"],
                  depends=["accelmath/_core/_hostcall.h"], optional=True),
    ],
)
