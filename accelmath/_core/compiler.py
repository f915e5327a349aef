"""Compile CUDA C++ with NVRTC (works without a GPU)."""

import ctypes

from accelmath.bindings import nvrtc
from accelmath.errors import CompileError, CudaLibraryError

__all__ = ["compile_cuda"]


def compile_cuda(source, name, compute_capability, *, lto=False, options=()):
    """Compile CUDA C++ ``source`` for one architecture and return the binary.

    Parameters
    ----------
    source : str
        The CUDA C++ source.
    name : str
        A file name for messages.
    compute_capability : tuple of int
        ``(major, minor)`` of the target GPU.
    lto : bool
        Return LTO-IR (for cuFFT JIT callbacks) instead of a cubin.
    options : sequence of str
        Further NVRTC options.

    Returns
    -------
    bytes
        The cubin, or the LTO-IR when ``lto`` is true.

    Raises
    ------
    CompileError
        If compilation fails; ``log`` holds NVRTC's log.

    Examples
    --------
    >>> from accelmath._core.compiler import compile_cuda
    >>> cubin = compile_cuda('extern "C" __global__ void k() {}', "k.cu", (9, 0))
    >>> len(cubin) > 0
    True
    """
    major, minor = compute_capability
    opts = [f"--gpu-architecture=sm_{major}{minor}", "--std=c++17", *options]
    if lto:
        opts.append("-dlto")
    program = ctypes.c_void_p()
    nvrtc.lib.create_program(ctypes.byref(program), source.encode(), name.encode(), 0, None,
                             None)
    try:
        argv = (ctypes.c_char_p * len(opts))(*(o.encode() for o in opts))
        try:
            nvrtc.lib.compile_program(program, len(opts), argv)
        except CudaLibraryError as exc:
            raise CompileError(f"NVRTC could not compile {name} ({exc.status_name})",
                               _log(program)) from None
        size = ctypes.c_size_t()
        if lto:
            nvrtc.lib.get_ltoir_size(program, ctypes.byref(size))
            buffer = ctypes.create_string_buffer(size.value)
            nvrtc.lib.get_ltoir(program, buffer)
        else:
            nvrtc.lib.get_cubin_size(program, ctypes.byref(size))
            buffer = ctypes.create_string_buffer(size.value)
            nvrtc.lib.get_cubin(program, buffer)
        return buffer.raw
    finally:
        nvrtc.lib.destroy_program(ctypes.byref(program))


def _log(program):
    size = ctypes.c_size_t()
    nvrtc.lib.get_program_log_size(program, ctypes.byref(size))
    buffer = ctypes.create_string_buffer(size.value)
    nvrtc.lib.get_program_log(program, buffer)
    return buffer.value.decode(errors="replace")
