"""ctypes bindings for nvJitLink, the CUDA JIT linker (links LTO-IR without a GPU).

nvJitLink's header turns each call into an inline wrapper around a versioned entry point
(``__nvJitLinkCreate_12_0`` under CUDA 12, ``__nvJitLinkCreate_13_0`` under CUDA 13); the
libraries also export the plain names. Each entry lists the plain name first and the
versioned ones after, for a library that exports only those.
"""

from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint, c_void_p

from accelmath.bindings._loader import Function, Library

__all__ = ["lib", "FUNCTIONS", "INPUT_TYPE", "STATUS_NAMES", "version"]

STATUS_NAMES = dict(enumerate([
    "NVJITLINK_SUCCESS", "NVJITLINK_ERROR_UNRECOGNIZED_OPTION", "NVJITLINK_ERROR_MISSING_ARCH",
    "NVJITLINK_ERROR_INVALID_INPUT", "NVJITLINK_ERROR_PTX_COMPILE",
    "NVJITLINK_ERROR_NVVM_COMPILE", "NVJITLINK_ERROR_INTERNAL", "NVJITLINK_ERROR_THREADPOOL",
    "NVJITLINK_ERROR_UNRECOGNIZED_INPUT", "NVJITLINK_ERROR_FINALIZE",
    # CUDA 13 adds these; CUDA 12 maps them onto the ones above.
    "NVJITLINK_ERROR_NULL_INPUT", "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
    "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE", "NVJITLINK_ERROR_ARCH_MISMATCH",
    "NVJITLINK_ERROR_OUTDATED_LIBRARY", "NVJITLINK_ERROR_MISSING_FATBIN",
    "NVJITLINK_ERROR_UNRECOGNIZED_ARCH", "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
    "NVJITLINK_ERROR_LTO_NOT_ENABLED",
]))

# nvJitLinkInputType values
INPUT_TYPE = {"cubin": 1, "ptx": 2, "ltoir": 3, "fatbin": 4, "object": 5, "library": 6}

_handle = c_void_p


def _names(name):
    """The C names of one function: the plain name, then the CUDA 13 and 12 versioned ones."""
    return (name, f"__{name}_13_0", f"__{name}_12_0")


FUNCTIONS = (
    # nvJitLinkResult nvJitLinkVersion(unsigned int *major, unsigned int *minor);
    Function("version", ("nvJitLinkVersion",), (POINTER(c_uint), POINTER(c_uint))),
    # nvJitLinkResult nvJitLinkCreate(nvJitLinkHandle *handle, uint32_t numOptions,
    #     const char **options);
    Function("create", _names("nvJitLinkCreate"), (POINTER(_handle), c_uint, POINTER(c_char_p))),
    # nvJitLinkResult nvJitLinkDestroy(nvJitLinkHandle *handle);
    Function("destroy", _names("nvJitLinkDestroy"), (POINTER(_handle),)),
    # nvJitLinkResult nvJitLinkAddData(nvJitLinkHandle handle, nvJitLinkInputType inputType,
    #     const void *data, size_t size, const char *name);
    Function("add_data", _names("nvJitLinkAddData"),
             (_handle, c_int, c_char_p, c_size_t, c_char_p)),
    # nvJitLinkResult nvJitLinkComplete(nvJitLinkHandle handle);
    Function("complete", _names("nvJitLinkComplete"), (_handle,)),
    # nvJitLinkResult nvJitLinkGetLinkedCubinSize(nvJitLinkHandle handle, size_t *size);
    Function("get_linked_cubin_size", _names("nvJitLinkGetLinkedCubinSize"),
             (_handle, POINTER(c_size_t))),
    # nvJitLinkResult nvJitLinkGetLinkedCubin(nvJitLinkHandle handle, void *cubin);
    Function("get_linked_cubin", _names("nvJitLinkGetLinkedCubin"), (_handle, c_char_p)),
    # nvJitLinkResult nvJitLinkGetErrorLogSize(nvJitLinkHandle handle, size_t *size);
    Function("get_error_log_size", _names("nvJitLinkGetErrorLogSize"),
             (_handle, POINTER(c_size_t))),
    # nvJitLinkResult nvJitLinkGetErrorLog(nvJitLinkHandle handle, char *log);
    Function("get_error_log", _names("nvJitLinkGetErrorLog"), (_handle, c_char_p)),
    # nvJitLinkResult nvJitLinkGetInfoLogSize(nvJitLinkHandle handle, size_t *size);
    Function("get_info_log_size", _names("nvJitLinkGetInfoLogSize"),
             (_handle, POINTER(c_size_t))),
    # nvJitLinkResult nvJitLinkGetInfoLog(nvJitLinkHandle handle, char *log);
    Function("get_info_log", _names("nvJitLinkGetInfoLog"), (_handle, c_char_p)),
)

lib = Library("nvJitLink", FUNCTIONS, STATUS_NAMES)


def version():
    """The nvJitLink version as ``(major, minor)``."""
    major, minor = c_uint(), c_uint()
    lib.version(major, minor)
    return major.value, minor.value
