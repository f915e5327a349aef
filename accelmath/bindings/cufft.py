"""ctypes bindings for cuFFT (CUDA 12: ``libcufft.so.11``; CUDA 13: ``libcufft.so.12``).

Functions are attributes of :data:`lib`, named in Python style (``lib.exec_c2c``), declared
once in :data:`FUNCTIONS` with the C prototype above each entry, and resolved on first use.
"""

from ctypes import POINTER, c_char_p, c_int, c_longlong, c_size_t, c_void_p

from accelmath.bindings._loader import Function, Library

__all__ = ["lib", "FUNCTIONS", "STATUS_NAMES", "TYPE", "DATA_TYPE", "CALLBACK_TYPE",
           "FORWARD", "INVERSE", "version"]

FORWARD = -1
INVERSE = 1

# cufftType
TYPE = {"R2C": 0x2A, "C2R": 0x2C, "C2C": 0x29, "D2Z": 0x6A, "Z2D": 0x6C, "Z2Z": 0x69}

# cudaDataType_t, by NumPy-style name
DATA_TYPE = {"float16": 2, "complex32": 6, "float32": 0, "complex64": 4, "float64": 1,
             "complex128": 5}

# cufftXtCallbackType
CALLBACK_TYPE = {"load_complex": 0, "load_complex_double": 1, "load_real": 2,
                 "load_real_double": 3, "store_complex": 4, "store_complex_double": 5,
                 "store_real": 6, "store_real_double": 7}

STATUS_NAMES = dict(enumerate([
    "CUFFT_SUCCESS", "CUFFT_INVALID_PLAN", "CUFFT_ALLOC_FAILED", "CUFFT_INVALID_TYPE",
    "CUFFT_INVALID_VALUE", "CUFFT_INTERNAL_ERROR", "CUFFT_EXEC_FAILED", "CUFFT_SETUP_FAILED",
    "CUFFT_INVALID_SIZE", "CUFFT_UNALIGNED_DATA", "CUFFT_INCOMPLETE_PARAMETER_LIST",
    "CUFFT_INVALID_DEVICE", "CUFFT_PARSE_ERROR", "CUFFT_NO_WORKSPACE", "CUFFT_NOT_IMPLEMENTED",
    "CUFFT_LICENSE_ERROR", "CUFFT_NOT_SUPPORTED", "CUFFT_MISSING_DEPENDENCY",
    "CUFFT_NVRTC_FAILURE", "CUFFT_NVJITLINK_FAILURE", "CUFFT_NVSHMEM_FAILURE",
]))

_p = c_void_p
_ll_p = POINTER(c_longlong)

FUNCTIONS = (
    # cufftResult cufftCreate(cufftHandle *plan);
    Function("create", ("cufftCreate",), (POINTER(c_int),)),
    # cufftResult cufftDestroy(cufftHandle plan);
    Function("destroy", ("cufftDestroy",), (c_int,)),
    # cufftResult cufftSetAutoAllocation(cufftHandle plan, int autoAllocate);
    Function("set_auto_allocation", ("cufftSetAutoAllocation",), (c_int, c_int)),
    # cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long *n,
    #     long long *inembed, long long istride, long long idist,
    #     long long *onembed, long long ostride, long long odist,
    #     cufftType type, long long batch, size_t *workSize);
    Function("make_plan_many64", ("cufftMakePlanMany64",),
             (c_int, c_int, _ll_p, _ll_p, c_longlong, c_longlong, _ll_p, c_longlong,
              c_longlong, c_int, c_longlong, POINTER(c_size_t))),
    # cufftResult cufftXtMakePlanMany(cufftHandle plan, int rank, long long *n,
    #     long long *inembed, long long istride, long long idist, cudaDataType inputtype,
    #     long long *onembed, long long ostride, long long odist, cudaDataType outputtype,
    #     long long batch, size_t *workSize, cudaDataType executiontype);
    Function("xt_make_plan_many", ("cufftXtMakePlanMany",),
             (c_int, c_int, _ll_p, _ll_p, c_longlong, c_longlong, c_int, _ll_p, c_longlong,
              c_longlong, c_int, c_longlong, POINTER(c_size_t), c_int)),
    # cufftResult cufftGetSize(cufftHandle handle, size_t *workSize);
    Function("get_size", ("cufftGetSize",), (c_int, POINTER(c_size_t))),
    # cufftResult cufftSetWorkArea(cufftHandle plan, void *workArea);
    Function("set_work_area", ("cufftSetWorkArea",), (c_int, _p)),
    # cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream);
    Function("set_stream", ("cufftSetStream",), (c_int, _p)),
    # cufftResult cufftExecC2C(cufftHandle plan, cufftComplex *idata, cufftComplex *odata,
    #     int direction);
    Function("exec_c2c", ("cufftExecC2C",), (c_int, _p, _p, c_int)),
    # cufftResult cufftExecR2C(cufftHandle plan, cufftReal *idata, cufftComplex *odata);
    Function("exec_r2c", ("cufftExecR2C",), (c_int, _p, _p)),
    # cufftResult cufftExecC2R(cufftHandle plan, cufftComplex *idata, cufftReal *odata);
    Function("exec_c2r", ("cufftExecC2R",), (c_int, _p, _p)),
    # cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex *idata,
    #     cufftDoubleComplex *odata, int direction);
    Function("exec_z2z", ("cufftExecZ2Z",), (c_int, _p, _p, c_int)),
    # cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal *idata,
    #     cufftDoubleComplex *odata);
    Function("exec_d2z", ("cufftExecD2Z",), (c_int, _p, _p)),
    # cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex *idata,
    #     cufftDoubleReal *odata);
    Function("exec_z2d", ("cufftExecZ2D",), (c_int, _p, _p)),
    # cufftResult cufftXtExec(cufftHandle plan, void *input, void *output, int direction);
    Function("xt_exec", ("cufftXtExec",), (c_int, _p, _p, c_int)),
    # cufftResult cufftXtSetJITCallback(cufftHandle plan, const char *lto_callback_symbol_name,
    #     const void *lto_callback_fatbin, size_t lto_callback_fatbin_size,
    #     cufftXtCallbackType type, void **caller_info);
    # CUDA 12.7+ exports this signature as __cufftXtSetJITCallback_12_7; CUDA 13 plainly.
    Function("xt_set_jit_callback", ("__cufftXtSetJITCallback_12_7", "cufftXtSetJITCallback"),
             (c_int, c_char_p, _p, c_size_t, c_int, POINTER(c_void_p))),
    # cufftResult cufftGetVersion(int *version);
    Function("get_version", ("cufftGetVersion",), (POINTER(c_int),)),
    # cufftResult cufftGetProperty(libraryPropertyType type, int *value);
    Function("get_property", ("cufftGetProperty",), (c_int, POINTER(c_int))),
)

lib = Library("cufft", FUNCTIONS, STATUS_NAMES)


def version():
    """The cuFFT version as an integer (for example 11401 for 11.4.1)."""
    value = c_int()
    lib.get_version(value)
    return value.value
