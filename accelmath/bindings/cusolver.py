"""ctypes bindings for dense cuSOLVER (CUDA 12: ``libcusolver.so.11``; 13: ``libcusolver.so.12``).

Functions are attributes of :data:`lib`, named in Python style (``lib.xpotrf``,
``lib.dsyevj_batched_buffer_size``), declared once in :data:`FUNCTIONS` with the C prototype
above each entry, and resolved on first use. Every function returns a ``cusolverStatus_t``,
checked in one place: a failure raises :class:`~accelmath.errors.CudaLibraryError`.

The factorizations go through the 64-bit generic API (``cusolverDnX*``): sizes are
``int64_t``, element types are ``cudaDataType`` values (:data:`DATA_TYPE`), buffers are
``void *``, and each ``*_buffer_size`` query returns two sizes, one for a device and one for a
host workspace. The older 64-bit API (``cusolverDnPotrf``, ...) is gone from CUDA 13 and not
bound. ``info`` arguments are device pointers throughout.

The fill mode, operation and side arguments take cuBLAS's values, re-exported from
:mod:`~accelmath.bindings.cublas` with its data types.
"""

from ctypes import POINTER, c_byte, c_double, c_int, c_int64, c_size_t, c_void_p

from accelmath.bindings._loader import Function, Library
from accelmath.bindings.cublas import DATA_TYPE, FILL_MODE, OPERATION, SIDE

__all__ = ["lib", "FUNCTIONS", "STATUS_NAMES", "EIG_MODE", "DATA_TYPE", "FILL_MODE",
           "OPERATION", "SIDE", "version"]

STATUS_NAMES = {
    0: "CUSOLVER_STATUS_SUCCESS", 1: "CUSOLVER_STATUS_NOT_INITIALIZED",
    2: "CUSOLVER_STATUS_ALLOC_FAILED", 3: "CUSOLVER_STATUS_INVALID_VALUE",
    4: "CUSOLVER_STATUS_ARCH_MISMATCH", 5: "CUSOLVER_STATUS_MAPPING_ERROR",
    6: "CUSOLVER_STATUS_EXECUTION_FAILED", 7: "CUSOLVER_STATUS_INTERNAL_ERROR",
    8: "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED", 9: "CUSOLVER_STATUS_NOT_SUPPORTED",
    10: "CUSOLVER_STATUS_ZERO_PIVOT", 11: "CUSOLVER_STATUS_INVALID_LICENSE",
    12: "CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED", 13: "CUSOLVER_STATUS_IRS_PARAMS_INVALID",
    14: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC",
    15: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_REFINE",
    16: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_MAXITER", 20: "CUSOLVER_STATUS_IRS_INTERNAL_ERROR",
    21: "CUSOLVER_STATUS_IRS_NOT_SUPPORTED", 22: "CUSOLVER_STATUS_IRS_OUT_OF_RANGE",
    23: "CUSOLVER_STATUS_IRS_NRHS_NOT_SUPPORTED_FOR_REFINE_GMRES",
    25: "CUSOLVER_STATUS_IRS_INFOS_NOT_INITIALIZED",
    26: "CUSOLVER_STATUS_IRS_INFOS_NOT_DESTROYED", 30: "CUSOLVER_STATUS_IRS_MATRIX_SINGULAR",
    31: "CUSOLVER_STATUS_INVALID_WORKSPACE",
}

# cusolverEigMode_t
EIG_MODE = {"NOVECTOR": 0, "VECTOR": 1}

_h = c_void_p  # cusolverDnHandle_t, cusolverDnParams_t, syevjInfo_t, gesvdjInfo_t
_p = c_void_p  # device or host buffer
_i64 = c_int64
_size_p = POINTER(c_size_t)  # host size_t output
_lwork = POINTER(c_int)  # host int output of the typed buffer-size queries


def _typed(py_name, c_name, argtypes, stems):
    """One entry per precision; ``{}`` in the names stands for the stem (``Sorgqr``, ...)."""
    return tuple(Function(py_name.format(s.lower()), (c_name.format(s),), argtypes)
                 for s in stems)


# In the typed prototypes below T is float, double, cuComplex or cuDoubleComplex and R its
# real type; <t> is S, D, C or Z.
FUNCTIONS = (
    # cusolverStatus_t cusolverGetVersion(int *version);
    Function("get_version", ("cusolverGetVersion",), (POINTER(c_int),)),
    # cusolverStatus_t cusolverGetProperty(libraryPropertyType type, int *value);
    Function("get_property", ("cusolverGetProperty",), (c_int, POINTER(c_int))),
    # cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t *handle);
    Function("create", ("cusolverDnCreate",), (POINTER(_h),)),
    # cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t handle);
    Function("destroy", ("cusolverDnDestroy",), (_h,)),
    # cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t streamId);
    Function("set_stream", ("cusolverDnSetStream",), (_h, _p)),
    # cusolverStatus_t cusolverDnGetStream(cusolverDnHandle_t handle, cudaStream_t *streamId);
    Function("get_stream", ("cusolverDnGetStream",), (_h, POINTER(_p))),
    # cusolverStatus_t cusolverDnCreateParams(cusolverDnParams_t *params);
    Function("create_params", ("cusolverDnCreateParams",), (POINTER(_h),)),
    # cusolverStatus_t cusolverDnDestroyParams(cusolverDnParams_t params);
    Function("destroy_params", ("cusolverDnDestroyParams",), (_h,)),

    # cusolverStatus_t cusolverDnXpotrf_bufferSize(cusolverDnHandle_t handle,
    #     cusolverDnParams_t params, cublasFillMode_t uplo, int64_t n, cudaDataType dataTypeA,
    #     const void *A, int64_t lda, cudaDataType computeType,
    #     size_t *workspaceInBytesOnDevice, size_t *workspaceInBytesOnHost);
    Function("xpotrf_buffer_size", ("cusolverDnXpotrf_bufferSize",),
             (_h, _h, c_int, _i64, c_int, _p, _i64, c_int, _size_p, _size_p)),
    # cusolverStatus_t cusolverDnXpotrf(cusolverDnHandle_t handle, cusolverDnParams_t params,
    #     cublasFillMode_t uplo, int64_t n, cudaDataType dataTypeA, void *A, int64_t lda,
    #     cudaDataType computeType, void *bufferOnDevice, size_t workspaceInBytesOnDevice,
    #     void *bufferOnHost, size_t workspaceInBytesOnHost, int *info);
    Function("xpotrf", ("cusolverDnXpotrf",),
             (_h, _h, c_int, _i64, c_int, _p, _i64, c_int, _p, c_size_t, _p, c_size_t, _p)),
    # cusolverStatus_t cusolverDnXpotrs(cusolverDnHandle_t handle, cusolverDnParams_t params,
    #     cublasFillMode_t uplo, int64_t n, int64_t nrhs, cudaDataType dataTypeA,
    #     const void *A, int64_t lda, cudaDataType dataTypeB, void *B, int64_t ldb, int *info);
    Function("xpotrs", ("cusolverDnXpotrs",),
             (_h, _h, c_int, _i64, _i64, c_int, _p, _i64, c_int, _p, _i64, _p)),
    # cusolverStatus_t cusolverDnXgetrf_bufferSize(cusolverDnHandle_t handle,
    #     cusolverDnParams_t params, int64_t m, int64_t n, cudaDataType dataTypeA,
    #     const void *A, int64_t lda, cudaDataType computeType,
    #     size_t *workspaceInBytesOnDevice, size_t *workspaceInBytesOnHost);
    Function("xgetrf_buffer_size", ("cusolverDnXgetrf_bufferSize",),
             (_h, _h, _i64, _i64, c_int, _p, _i64, c_int, _size_p, _size_p)),
    # cusolverStatus_t cusolverDnXgetrf(cusolverDnHandle_t handle, cusolverDnParams_t params,
    #     int64_t m, int64_t n, cudaDataType dataTypeA, void *A, int64_t lda, int64_t *ipiv,
    #     cudaDataType computeType, void *bufferOnDevice, size_t workspaceInBytesOnDevice,
    #     void *bufferOnHost, size_t workspaceInBytesOnHost, int *info);
    Function("xgetrf", ("cusolverDnXgetrf",),
             (_h, _h, _i64, _i64, c_int, _p, _i64, _p, c_int, _p, c_size_t, _p, c_size_t, _p)),
    # cusolverStatus_t cusolverDnXgetrs(cusolverDnHandle_t handle, cusolverDnParams_t params,
    #     cublasOperation_t trans, int64_t n, int64_t nrhs, cudaDataType dataTypeA,
    #     const void *A, int64_t lda, const int64_t *ipiv, cudaDataType dataTypeB, void *B,
    #     int64_t ldb, int *info);
    Function("xgetrs", ("cusolverDnXgetrs",),
             (_h, _h, c_int, _i64, _i64, c_int, _p, _i64, _p, c_int, _p, _i64, _p)),
    # cusolverStatus_t cusolverDnXgeqrf_bufferSize(cusolverDnHandle_t handle,
    #     cusolverDnParams_t params, int64_t m, int64_t n, cudaDataType dataTypeA,
    #     const void *A, int64_t lda, cudaDataType dataTypeTau, const void *tau,
    #     cudaDataType computeType, size_t *workspaceInBytesOnDevice,
    #     size_t *workspaceInBytesOnHost);
    Function("xgeqrf_buffer_size", ("cusolverDnXgeqrf_bufferSize",),
             (_h, _h, _i64, _i64, c_int, _p, _i64, c_int, _p, c_int, _size_p, _size_p)),
    # cusolverStatus_t cusolverDnXgeqrf(cusolverDnHandle_t handle, cusolverDnParams_t params,
    #     int64_t m, int64_t n, cudaDataType dataTypeA, void *A, int64_t lda,
    #     cudaDataType dataTypeTau, void *tau, cudaDataType computeType, void *bufferOnDevice,
    #     size_t workspaceInBytesOnDevice, void *bufferOnHost, size_t workspaceInBytesOnHost,
    #     int *info);
    Function("xgeqrf", ("cusolverDnXgeqrf",),
             (_h, _h, _i64, _i64, c_int, _p, _i64, c_int, _p, c_int, _p, c_size_t, _p,
              c_size_t, _p)),
    # cusolverStatus_t cusolverDnXsyevd_bufferSize(cusolverDnHandle_t handle,
    #     cusolverDnParams_t params, cusolverEigMode_t jobz, cublasFillMode_t uplo, int64_t n,
    #     cudaDataType dataTypeA, const void *A, int64_t lda, cudaDataType dataTypeW,
    #     const void *W, cudaDataType computeType, size_t *workspaceInBytesOnDevice,
    #     size_t *workspaceInBytesOnHost);
    Function("xsyevd_buffer_size", ("cusolverDnXsyevd_bufferSize",),
             (_h, _h, c_int, c_int, _i64, c_int, _p, _i64, c_int, _p, c_int, _size_p,
              _size_p)),
    # cusolverStatus_t cusolverDnXsyevd(cusolverDnHandle_t handle, cusolverDnParams_t params,
    #     cusolverEigMode_t jobz, cublasFillMode_t uplo, int64_t n, cudaDataType dataTypeA,
    #     void *A, int64_t lda, cudaDataType dataTypeW, void *W, cudaDataType computeType,
    #     void *bufferOnDevice, size_t workspaceInBytesOnDevice, void *bufferOnHost,
    #     size_t workspaceInBytesOnHost, int *info);
    Function("xsyevd", ("cusolverDnXsyevd",),
             (_h, _h, c_int, c_int, _i64, c_int, _p, _i64, c_int, _p, c_int, _p, c_size_t, _p,
              c_size_t, _p)),
    # cusolverStatus_t cusolverDnXgesvd_bufferSize(cusolverDnHandle_t handle,
    #     cusolverDnParams_t params, signed char jobu, signed char jobvt, int64_t m,
    #     int64_t n, cudaDataType dataTypeA, const void *A, int64_t lda,
    #     cudaDataType dataTypeS, const void *S, cudaDataType dataTypeU, const void *U,
    #     int64_t ldu, cudaDataType dataTypeVT, const void *VT, int64_t ldvt,
    #     cudaDataType computeType, size_t *workspaceInBytesOnDevice,
    #     size_t *workspaceInBytesOnHost);
    # jobu and jobvt are characters ('A', 'S', 'O', 'N'): pass ord('A').
    Function("xgesvd_buffer_size", ("cusolverDnXgesvd_bufferSize",),
             (_h, _h, c_byte, c_byte, _i64, _i64, c_int, _p, _i64, c_int, _p, c_int, _p, _i64,
              c_int, _p, _i64, c_int, _size_p, _size_p)),
    # cusolverStatus_t cusolverDnXgesvd(cusolverDnHandle_t handle, cusolverDnParams_t params,
    #     signed char jobu, signed char jobvt, int64_t m, int64_t n, cudaDataType dataTypeA,
    #     void *A, int64_t lda, cudaDataType dataTypeS, void *S, cudaDataType dataTypeU,
    #     void *U, int64_t ldu, cudaDataType dataTypeVT, void *VT, int64_t ldvt,
    #     cudaDataType computeType, void *bufferOnDevice, size_t workspaceInBytesOnDevice,
    #     void *bufferOnHost, size_t workspaceInBytesOnHost, int *info);
    Function("xgesvd", ("cusolverDnXgesvd",),
             (_h, _h, c_byte, c_byte, _i64, _i64, c_int, _p, _i64, c_int, _p, c_int, _p, _i64,
              c_int, _p, _i64, c_int, _p, c_size_t, _p, c_size_t, _p)),

    # cusolverStatus_t cusolverDn{S,D}orgqr_bufferSize / cusolverDn{C,Z}ungqr_bufferSize(
    #     cusolverDnHandle_t handle, int m, int n, int k, const T *A, int lda, const T *tau,
    #     int *lwork);
    *_typed("{}_buffer_size", "cusolverDn{}_bufferSize",
            (_h, c_int, c_int, c_int, _p, c_int, _p, _lwork),
            ("Sorgqr", "Dorgqr", "Cungqr", "Zungqr")),
    # cusolverStatus_t cusolverDn{S,D}orgqr / cusolverDn{C,Z}ungqr(cusolverDnHandle_t handle,
    #     int m, int n, int k, T *A, int lda, const T *tau, T *work, int lwork, int *info);
    *_typed("{}", "cusolverDn{}", (_h, c_int, c_int, c_int, _p, c_int, _p, _p, c_int, _p),
            ("Sorgqr", "Dorgqr", "Cungqr", "Zungqr")),
    # cusolverStatus_t cusolverDn{S,D}ormqr_bufferSize / cusolverDn{C,Z}unmqr_bufferSize(
    #     cusolverDnHandle_t handle, cublasSideMode_t side, cublasOperation_t trans, int m,
    #     int n, int k, const T *A, int lda, const T *tau, const T *C, int ldc, int *lwork);
    *_typed("{}_buffer_size", "cusolverDn{}_bufferSize",
            (_h, c_int, c_int, c_int, c_int, c_int, _p, c_int, _p, _p, c_int, _lwork),
            ("Sormqr", "Dormqr", "Cunmqr", "Zunmqr")),
    # cusolverStatus_t cusolverDn{S,D}ormqr / cusolverDn{C,Z}unmqr(cusolverDnHandle_t handle,
    #     cublasSideMode_t side, cublasOperation_t trans, int m, int n, int k, const T *A,
    #     int lda, const T *tau, T *C, int ldc, T *work, int lwork, int *devInfo);
    *_typed("{}", "cusolverDn{}",
            (_h, c_int, c_int, c_int, c_int, c_int, _p, c_int, _p, _p, c_int, _p, c_int, _p),
            ("Sormqr", "Dormqr", "Cunmqr", "Zunmqr")),

    # cusolverStatus_t cusolverDn<t>potrfBatched(cusolverDnHandle_t handle,
    #     cublasFillMode_t uplo, int n, T *Aarray[], int lda, int *infoArray, int batchSize);
    # Aarray is a device array of device pointers; infoArray holds one int per matrix.
    *_typed("{}_batched", "cusolverDn{}Batched", (_h, c_int, c_int, _p, c_int, _p, c_int),
            ("Spotrf", "Dpotrf", "Cpotrf", "Zpotrf")),
    # cusolverStatus_t cusolverDn<t>potrsBatched(cusolverDnHandle_t handle,
    #     cublasFillMode_t uplo, int n, int nrhs, T *A[], int lda, T *B[], int ldb,
    #     int *d_info, int batchSize);
    # cuSOLVER accepts only nrhs == 1 here; d_info is a single int.
    *_typed("{}_batched", "cusolverDn{}Batched",
            (_h, c_int, c_int, c_int, _p, c_int, _p, c_int, _p, c_int),
            ("Spotrs", "Dpotrs", "Cpotrs", "Zpotrs")),

    # cusolverStatus_t cusolverDnCreateSyevjInfo(syevjInfo_t *info);
    Function("create_syevj_info", ("cusolverDnCreateSyevjInfo",), (POINTER(_h),)),
    # cusolverStatus_t cusolverDnDestroySyevjInfo(syevjInfo_t info);
    Function("destroy_syevj_info", ("cusolverDnDestroySyevjInfo",), (_h,)),
    # cusolverStatus_t cusolverDnXsyevjSetTolerance(syevjInfo_t info, double tolerance);
    Function("xsyevj_set_tolerance", ("cusolverDnXsyevjSetTolerance",), (_h, c_double)),
    # cusolverStatus_t cusolverDnXsyevjSetMaxSweeps(syevjInfo_t info, int max_sweeps);
    Function("xsyevj_set_max_sweeps", ("cusolverDnXsyevjSetMaxSweeps",), (_h, c_int)),
    # cusolverStatus_t cusolverDn{S,D}syevjBatched_bufferSize /
    #     cusolverDn{C,Z}heevjBatched_bufferSize(cusolverDnHandle_t handle,
    #     cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, const T *A, int lda,
    #     const R *W, int *lwork, syevjInfo_t params, int batchSize);
    *_typed("{}_batched_buffer_size", "cusolverDn{}Batched_bufferSize",
            (_h, c_int, c_int, c_int, _p, c_int, _p, _lwork, _h, c_int),
            ("Ssyevj", "Dsyevj", "Cheevj", "Zheevj")),
    # cusolverStatus_t cusolverDn{S,D}syevjBatched / cusolverDn{C,Z}heevjBatched(
    #     cusolverDnHandle_t handle, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n,
    #     T *A, int lda, R *W, T *work, int lwork, int *info, syevjInfo_t params,
    #     int batchSize);
    *_typed("{}_batched", "cusolverDn{}Batched",
            (_h, c_int, c_int, c_int, _p, c_int, _p, _p, c_int, _p, _h, c_int),
            ("Ssyevj", "Dsyevj", "Cheevj", "Zheevj")),

    # cusolverStatus_t cusolverDnCreateGesvdjInfo(gesvdjInfo_t *info);
    Function("create_gesvdj_info", ("cusolverDnCreateGesvdjInfo",), (POINTER(_h),)),
    # cusolverStatus_t cusolverDnDestroyGesvdjInfo(gesvdjInfo_t info);
    Function("destroy_gesvdj_info", ("cusolverDnDestroyGesvdjInfo",), (_h,)),
    # cusolverStatus_t cusolverDnXgesvdjSetTolerance(gesvdjInfo_t info, double tolerance);
    Function("xgesvdj_set_tolerance", ("cusolverDnXgesvdjSetTolerance",), (_h, c_double)),
    # cusolverStatus_t cusolverDnXgesvdjSetMaxSweeps(gesvdjInfo_t info, int max_sweeps);
    Function("xgesvdj_set_max_sweeps", ("cusolverDnXgesvdjSetMaxSweeps",), (_h, c_int)),
    # cusolverStatus_t cusolverDn<t>gesvdj_bufferSize(cusolverDnHandle_t handle,
    #     cusolverEigMode_t jobz, int econ, int m, int n, const T *A, int lda, const R *S,
    #     const T *U, int ldu, const T *V, int ldv, int *lwork, gesvdjInfo_t params);
    *_typed("{}_buffer_size", "cusolverDn{}_bufferSize",
            (_h, c_int, c_int, c_int, c_int, _p, c_int, _p, _p, c_int, _p, c_int, _lwork, _h),
            ("Sgesvdj", "Dgesvdj", "Cgesvdj", "Zgesvdj")),
    # cusolverStatus_t cusolverDn<t>gesvdj(cusolverDnHandle_t handle, cusolverEigMode_t jobz,
    #     int econ, int m, int n, T *A, int lda, R *S, T *U, int ldu, T *V, int ldv, T *work,
    #     int lwork, int *info, gesvdjInfo_t params);
    # One matrix of any shape; V (not V^H) comes back, n x n (econ: n x min(m, n)).
    *_typed("{}", "cusolverDn{}",
            (_h, c_int, c_int, c_int, c_int, _p, c_int, _p, _p, c_int, _p, c_int, _p, c_int,
             _p, _h),
            ("Sgesvdj", "Dgesvdj", "Cgesvdj", "Zgesvdj")),
    # cusolverStatus_t cusolverDn<t>gesvdjBatched_bufferSize(cusolverDnHandle_t handle,
    #     cusolverEigMode_t jobz, int m, int n, const T *A, int lda, const R *S, const T *U,
    #     int ldu, const T *V, int ldv, int *lwork, gesvdjInfo_t params, int batchSize);
    *_typed("{}_batched_buffer_size", "cusolverDn{}Batched_bufferSize",
            (_h, c_int, c_int, c_int, _p, c_int, _p, _p, c_int, _p, c_int, _lwork, _h, c_int),
            ("Sgesvdj", "Dgesvdj", "Cgesvdj", "Zgesvdj")),
    # cusolverStatus_t cusolverDn<t>gesvdjBatched(cusolverDnHandle_t handle,
    #     cusolverEigMode_t jobz, int m, int n, T *A, int lda, R *S, T *U, int ldu, T *V,
    #     int ldv, T *work, int lwork, int *info, gesvdjInfo_t params, int batchSize);
    # Matrices are at most 32 x 32.
    *_typed("{}_batched", "cusolverDn{}Batched",
            (_h, c_int, c_int, c_int, _p, c_int, _p, _p, c_int, _p, c_int, _p, c_int, _p, _h,
             c_int),
            ("Sgesvdj", "Dgesvdj", "Cgesvdj", "Zgesvdj")),
)

lib = Library("cusolver", FUNCTIONS, STATUS_NAMES)


def version():
    """The cuSOLVER version as an integer, ``major * 1000 + minor * 100 + patch``.

    ``cusolverGetVersion`` needs no handle and no GPU.

    Examples
    --------
    >>> from accelmath.bindings import cusolver
    >>> cusolver.version() >= 11000
    True
    """
    value = c_int()
    lib.get_version(value)
    return value.value
