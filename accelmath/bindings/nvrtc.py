"""ctypes bindings for NVRTC, the CUDA run-time compiler (compiles without a GPU)."""

from ctypes import POINTER, c_char_p, c_int, c_size_t, c_void_p

from accelmath.bindings._loader import Function, Library

__all__ = ["lib", "FUNCTIONS", "STATUS_NAMES", "version"]

STATUS_NAMES = dict(enumerate([
    "NVRTC_SUCCESS", "NVRTC_ERROR_OUT_OF_MEMORY", "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
    "NVRTC_ERROR_INVALID_INPUT", "NVRTC_ERROR_INVALID_PROGRAM", "NVRTC_ERROR_INVALID_OPTION",
    "NVRTC_ERROR_COMPILATION", "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
    "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
    "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION", "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
    "NVRTC_ERROR_INTERNAL_ERROR", "NVRTC_ERROR_TIME_FILE_WRITE_FAILED",
]))

_prog = c_void_p
_strs = POINTER(c_char_p)

FUNCTIONS = (
    # nvrtcResult nvrtcVersion(int *major, int *minor);
    Function("version", ("nvrtcVersion",), (POINTER(c_int), POINTER(c_int))),
    # nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name,
    #     int numHeaders, const char * const *headers, const char * const *includeNames);
    Function("create_program", ("nvrtcCreateProgram",),
             (POINTER(_prog), c_char_p, c_char_p, c_int, _strs, _strs)),
    # nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog);
    Function("destroy_program", ("nvrtcDestroyProgram",), (POINTER(_prog),)),
    # nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions,
    #     const char * const *options);
    Function("compile_program", ("nvrtcCompileProgram",), (_prog, c_int, _strs)),
    # nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *logSizeRet);
    Function("get_program_log_size", ("nvrtcGetProgramLogSize",), (_prog, POINTER(c_size_t))),
    # nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log);
    Function("get_program_log", ("nvrtcGetProgramLog",), (_prog, c_char_p)),
    # nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *cubinSizeRet);
    Function("get_cubin_size", ("nvrtcGetCUBINSize",), (_prog, POINTER(c_size_t))),
    # nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin);
    Function("get_cubin", ("nvrtcGetCUBIN",), (_prog, c_char_p)),
    # nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *ptxSizeRet);
    Function("get_ptx_size", ("nvrtcGetPTXSize",), (_prog, POINTER(c_size_t))),
    # nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *ptx);
    Function("get_ptx", ("nvrtcGetPTX",), (_prog, c_char_p)),
    # nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram prog, size_t *LTOIRSizeRet);
    Function("get_ltoir_size", ("nvrtcGetLTOIRSize",), (_prog, POINTER(c_size_t))),
    # nvrtcResult nvrtcGetLTOIR(nvrtcProgram prog, char *LTOIR);
    Function("get_ltoir", ("nvrtcGetLTOIR",), (_prog, c_char_p)),
    # nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char * const name_expression);
    Function("add_name_expression", ("nvrtcAddNameExpression",), (_prog, c_char_p)),
    # nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char *const name_expression,
    #     const char **lowered_name);
    Function("get_lowered_name", ("nvrtcGetLoweredName",), (_prog, c_char_p, POINTER(c_char_p))),
)

lib = Library("nvrtc", FUNCTIONS, STATUS_NAMES)


def version():
    """The NVRTC version as ``(major, minor)``."""
    major, minor = c_int(), c_int()
    lib.version(major, minor)
    return major.value, minor.value
