"""ctypes bindings for cuBLAS (CUDA 12: ``libcublas.so.12``; CUDA 13: ``libcublas.so.13``).

Functions are attributes of :data:`lib`, named in Python style (``lib.sgemm``,
``lib.gemm_strided_batched_ex``), declared once in :data:`FUNCTIONS` with the C prototype
above each entry, and resolved on first use. Every function returns a ``cublasStatus_t``,
checked in one place: a failure raises :class:`~accelmath.errors.CudaLibraryError`.

The handle API is bound through its ``_v2`` symbols (``cublasCreate_v2``, ``cublasSgemm_v2``),
which ``cublas_v2.h`` maps the plain names to, and which both cuBLAS 12 and 13 export; the
plain ``cublasSgemm`` symbol is the legacy API, with another signature.

The enum dictionaries are keyed by the C enumerator less its common prefix
(``OPERATION["T"]`` is ``CUBLAS_OP_T``, ``COMPUTE_TYPE["32F_FAST_TF32"]`` is
``CUBLAS_COMPUTE_32F_FAST_TF32``); :data:`DATA_TYPE` (``cudaDataType``) is keyed by NumPy-style
name, as in :mod:`~accelmath.bindings.cufft`.
"""

from ctypes import POINTER, c_int, c_longlong, c_size_t, c_void_p

from accelmath.bindings._loader import Function, Library

__all__ = ["lib", "FUNCTIONS", "STATUS_NAMES", "OPERATION", "FILL_MODE", "SIDE", "DIAG",
           "POINTER_MODE", "MATH_MODE", "COMPUTE_TYPE", "GEMM_ALGO", "DATA_TYPE",
           "LIBRARY_PROPERTY", "version"]

STATUS_NAMES = {
    0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED",
    3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
    8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
    13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR",
    15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

# cublasOperation_t
OPERATION = {"N": 0, "T": 1, "C": 2}
# cublasFillMode_t
FILL_MODE = {"LOWER": 0, "UPPER": 1, "FULL": 2}
# cublasSideMode_t
SIDE = {"LEFT": 0, "RIGHT": 1}
# cublasDiagType_t
DIAG = {"NON_UNIT": 0, "UNIT": 1}
# cublasPointerMode_t: where alpha and beta live
POINTER_MODE = {"HOST": 0, "DEVICE": 1}
# cublasMath_t (DISALLOW_REDUCED_PRECISION_REDUCTION is a flag to OR with the others)
MATH_MODE = {"DEFAULT": 0, "PEDANTIC": 2, "TF32_TENSOR_OP": 3,
             "DISALLOW_REDUCED_PRECISION_REDUCTION": 16}
# cublasComputeType_t
COMPUTE_TYPE = {"16F": 64, "16F_PEDANTIC": 65, "32F": 68, "32F_PEDANTIC": 69,
                "32F_FAST_16F": 74, "32F_FAST_16BF": 75, "32F_FAST_TF32": 77, "64F": 70,
                "64F_PEDANTIC": 71, "32I": 72, "32I_PEDANTIC": 73}
# cublasGemmAlgo_t (the numbered algorithms are ignored since Ampere)
GEMM_ALGO = {"DEFAULT": -1, "DEFAULT_TENSOR_OP": 99}
# cudaDataType_t, by NumPy-style name (CUDA_R_16F, CUDA_C_16F, CUDA_R_16BF, CUDA_R_32F, ...)
DATA_TYPE = {"float16": 2, "complex32": 6, "bfloat16": 14, "float32": 0, "complex64": 4,
             "float64": 1, "complex128": 5, "int8": 3, "uint8": 8, "int32": 10,
             "float8_e4m3fn": 28, "float8_e5m2": 29}
# libraryPropertyType_t
LIBRARY_PROPERTY = {"MAJOR_VERSION": 0, "MINOR_VERSION": 1, "PATCH_LEVEL": 2}

_h = c_void_p  # cublasHandle_t
_p = c_void_p  # device (or host scalar) pointer
_int_p = POINTER(c_int)  # host int output
_ll = c_longlong


def _typed(py_name, c_name, argtypes, stems="SDCZ"):
    """One entry per precision; ``{}`` in the names stands for the precision letter."""
    return tuple(Function(py_name.format(s.lower()), (c_name.format(s),), argtypes)
                 for s in stems)


# In the typed prototypes below <t> is S, D, C or Z and T is float, double, cuComplex or
# cuDoubleComplex. Scalars (alpha, beta) are host or device pointers after the pointer mode.
FUNCTIONS = (
    # cublasStatus_t cublasCreate_v2(cublasHandle_t *handle);
    Function("create", ("cublasCreate_v2",), (POINTER(_h),)),
    # cublasStatus_t cublasDestroy_v2(cublasHandle_t handle);
    Function("destroy", ("cublasDestroy_v2",), (_h,)),
    # cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version);
    Function("get_version", ("cublasGetVersion_v2",), (_h, _int_p)),
    # cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value);
    Function("get_property", ("cublasGetProperty",), (c_int, _int_p)),
    # cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId);
    Function("set_stream", ("cublasSetStream_v2",), (_h, _p)),
    # cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId);
    Function("get_stream", ("cublasGetStream_v2",), (_h, POINTER(_p))),
    # cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
    #     size_t workspaceSizeInBytes);
    Function("set_workspace", ("cublasSetWorkspace_v2",), (_h, _p, c_size_t)),
    # cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
    Function("set_math_mode", ("cublasSetMathMode",), (_h, c_int)),
    # cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode);
    Function("get_math_mode", ("cublasGetMathMode",), (_h, _int_p)),
    # cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode);
    Function("set_pointer_mode", ("cublasSetPointerMode_v2",), (_h, c_int)),
    # cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode);
    Function("get_pointer_mode", ("cublasGetPointerMode_v2",), (_h, _int_p)),
    # cublasStatus_t cublas<t>gemm_v2(cublasHandle_t handle, cublasOperation_t transa,
    #     cublasOperation_t transb, int m, int n, int k, const T *alpha, const T *A, int lda,
    #     const T *B, int ldb, const T *beta, T *C, int ldc);
    *_typed("{}gemm", "cublas{}gemm_v2",
            (_h, c_int, c_int, c_int, c_int, c_int, _p, _p, c_int, _p, c_int, _p, _p, c_int)),
    # cublasStatus_t cublas<t>gemmStridedBatched(cublasHandle_t handle,
    #     cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    #     const T *alpha, const T *A, int lda, long long int strideA, const T *B, int ldb,
    #     long long int strideB, const T *beta, T *C, int ldc, long long int strideC,
    #     int batchCount);
    *_typed("{}gemm_strided_batched", "cublas{}gemmStridedBatched",
            (_h, c_int, c_int, c_int, c_int, c_int, _p, _p, c_int, _ll, _p, c_int, _ll, _p,
             _p, c_int, _ll, c_int)),
    # cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
    #     cublasOperation_t transb, int m, int n, int k, const void *alpha, const void *A,
    #     cudaDataType Atype, int lda, const void *B, cudaDataType Btype, int ldb,
    #     const void *beta, void *C, cudaDataType Ctype, int ldc,
    #     cublasComputeType_t computeType, cublasGemmAlgo_t algo);
    Function("gemm_ex", ("cublasGemmEx",),
             (_h, c_int, c_int, c_int, c_int, c_int, _p, _p, c_int, c_int, _p, c_int, c_int,
              _p, _p, c_int, c_int, c_int, c_int)),
    # cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle,
    #     cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    #     const void *alpha, const void *A, cudaDataType Atype, int lda,
    #     long long int strideA, const void *B, cudaDataType Btype, int ldb,
    #     long long int strideB, const void *beta, void *C, cudaDataType Ctype, int ldc,
    #     long long int strideC, int batchCount, cublasComputeType_t computeType,
    #     cublasGemmAlgo_t algo);
    Function("gemm_strided_batched_ex", ("cublasGemmStridedBatchedEx",),
             (_h, c_int, c_int, c_int, c_int, c_int, _p, _p, c_int, c_int, _ll, _p, c_int,
              c_int, _ll, _p, _p, c_int, c_int, _ll, c_int, c_int, c_int)),
    # cublasStatus_t cublas<t>trsm_v2(cublasHandle_t handle, cublasSideMode_t side,
    #     cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag, int m, int n,
    #     const T *alpha, const T *A, int lda, T *B, int ldb);
    *_typed("{}trsm", "cublas{}trsm_v2",
            (_h, c_int, c_int, c_int, c_int, c_int, c_int, _p, _p, c_int, _p, c_int)),
    # cublasStatus_t cublas<t>getrfBatched(cublasHandle_t handle, int n, T *const A[],
    #     int lda, int *P, int *info, int batchSize);
    # A (an array of matrix pointers), P and info are device memory.
    *_typed("{}getrf_batched", "cublas{}getrfBatched",
            (_h, c_int, _p, c_int, _p, _p, c_int)),
    # cublasStatus_t cublas<t>getrsBatched(cublasHandle_t handle, cublasOperation_t trans,
    #     int n, int nrhs, const T *const Aarray[], int lda, const int *devIpiv,
    #     T *const Barray[], int ldb, int *info, int batchSize);
    # info is a single int in host memory: only argument checks are reported.
    *_typed("{}getrs_batched", "cublas{}getrsBatched",
            (_h, c_int, c_int, c_int, _p, c_int, _p, _p, c_int, _int_p, c_int)),
    # cublasStatus_t cublas<t>getriBatched(cublasHandle_t handle, int n, const T *const A[],
    #     int lda, const int *P, T *const C[], int ldc, int *info, int batchSize);
    # info is device memory, one int per matrix.
    *_typed("{}getri_batched", "cublas{}getriBatched",
            (_h, c_int, _p, c_int, _p, _p, c_int, _p, c_int)),
)

lib = Library("cublas", FUNCTIONS, STATUS_NAMES)


def version():
    """The cuBLAS version as an integer, ``major * 10000 + minor * 100 + patch``.

    Read with ``cublasGetProperty``, which needs no handle and no GPU.

    Examples
    --------
    >>> from accelmath.bindings import cublas
    >>> cublas.version() >= 120000
    True
    """
    major, minor, patch = (c_int() for _ in range(3))
    lib.get_property(LIBRARY_PROPERTY["MAJOR_VERSION"], major)
    lib.get_property(LIBRARY_PROPERTY["MINOR_VERSION"], minor)
    lib.get_property(LIBRARY_PROPERTY["PATCH_LEVEL"], patch)
    return major.value * 10000 + minor.value * 100 + patch.value
