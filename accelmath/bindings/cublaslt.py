"""ctypes bindings for cuBLASLt (CUDA 12: ``libcublasLt.so.12``; CUDA 13: ``libcublasLt.so.13``).

Functions are attributes of :data:`lib`, named in Python style (``lib.matmul``,
``lib.matmul_desc_set_attribute``), declared once in :data:`FUNCTIONS` with the C prototype
above each entry, and resolved on first use. Functions that return a ``cublasStatus_t`` are
checked in one place; ``get_version`` and ``get_cudart_version`` return a ``size_t``, and
``get_status_name`` a string.

The attribute and epilogue dictionaries are keyed by the C enumerator less its common prefix
(``MATMUL_DESC_ATTRIBUTE["EPILOGUE"]`` is ``CUBLASLT_MATMUL_DESC_EPILOGUE``). The status names,
compute types, data types and operations are those of cuBLAS, re-exported from
:mod:`~accelmath.bindings.cublas`.
"""

from ctypes import (POINTER, Structure, c_char_p, c_float, c_int, c_int64, c_size_t, c_uint64,
                    c_void_p)

from accelmath.bindings._loader import Function, Library
from accelmath.bindings.cublas import COMPUTE_TYPE, DATA_TYPE, OPERATION, STATUS_NAMES

__all__ = ["lib", "FUNCTIONS", "STATUS_NAMES", "MatmulAlgo", "MatmulHeuristicResult",
           "MATMUL_DESC_ATTRIBUTE", "MATRIX_LAYOUT_ATTRIBUTE", "MATMUL_PREFERENCE_ATTRIBUTE",
           "EPILOGUE", "ORDER", "POINTER_MODE", "COMPUTE_TYPE", "DATA_TYPE", "OPERATION",
           "version"]

# cublasLtMatmulDescAttributes_t (value types in the header; pointers are device pointers)
MATMUL_DESC_ATTRIBUTE = {
    "COMPUTE_TYPE": 0, "SCALE_TYPE": 1, "POINTER_MODE": 2, "TRANSA": 3, "TRANSB": 4,
    "TRANSC": 5, "FILL_MODE": 6, "EPILOGUE": 7, "BIAS_POINTER": 8, "BIAS_BATCH_STRIDE": 10,
    "EPILOGUE_AUX_POINTER": 11, "EPILOGUE_AUX_LD": 12, "EPILOGUE_AUX_BATCH_STRIDE": 13,
    "ALPHA_VECTOR_BATCH_STRIDE": 14, "SM_COUNT_TARGET": 15, "A_SCALE_POINTER": 17,
    "B_SCALE_POINTER": 18, "C_SCALE_POINTER": 19, "D_SCALE_POINTER": 20, "AMAX_D_POINTER": 21,
    "EPILOGUE_AUX_DATA_TYPE": 22, "EPILOGUE_AUX_SCALE_POINTER": 23,
    "EPILOGUE_AUX_AMAX_POINTER": 24, "FAST_ACCUM": 25, "BIAS_DATA_TYPE": 26,
    "A_SCALE_MODE": 31, "B_SCALE_MODE": 32, "C_SCALE_MODE": 33, "D_SCALE_MODE": 34,
    "EPILOGUE_AUX_SCALE_MODE": 35, "D_OUT_SCALE_POINTER": 36, "D_OUT_SCALE_MODE": 37,
}

# cublasLtMatrixLayoutAttribute_t
MATRIX_LAYOUT_ATTRIBUTE = {"TYPE": 0, "ORDER": 1, "ROWS": 2, "COLS": 3, "LD": 4,
                           "BATCH_COUNT": 5, "STRIDED_BATCH_OFFSET": 6, "PLANE_OFFSET": 7}

# cublasLtMatmulPreferenceAttributes_t
MATMUL_PREFERENCE_ATTRIBUTE = {
    "SEARCH_MODE": 0, "MAX_WORKSPACE_BYTES": 1, "REDUCTION_SCHEME_MASK": 3,
    "MIN_ALIGNMENT_A_BYTES": 5, "MIN_ALIGNMENT_B_BYTES": 6, "MIN_ALIGNMENT_C_BYTES": 7,
    "MIN_ALIGNMENT_D_BYTES": 8, "MAX_WAVES_COUNT": 9, "IMPL_MASK": 12,
}

# cublasLtEpilogue_t: bit flags (RELU 2, BIAS 4, DRELU 8, BGRAD 16, GELU 32, DGELU 64,
# AUX 128), written out so that each value reads as in the header.
EPILOGUE = {
    "DEFAULT": 1, "RELU": 2, "RELU_AUX": 2 | 128, "BIAS": 4, "RELU_BIAS": 2 | 4,
    "RELU_AUX_BIAS": 2 | 128 | 4, "DRELU": 8 | 128, "DRELU_BGRAD": 8 | 128 | 16, "GELU": 32,
    "GELU_AUX": 32 | 128, "GELU_BIAS": 32 | 4, "GELU_AUX_BIAS": 32 | 128 | 4,
    "DGELU": 64 | 128, "DGELU_BGRAD": 64 | 128 | 16, "BGRADA": 256, "BGRADB": 512,
}

# cublasLtOrder_t (the tiled int8 orders are left out)
ORDER = {"COL": 0, "ROW": 1}

# cublasLtPointerMode_t
POINTER_MODE = {"HOST": 0, "DEVICE": 1, "DEVICE_VECTOR": 2,
                "ALPHA_DEVICE_VECTOR_BETA_ZERO": 3, "ALPHA_DEVICE_VECTOR_BETA_HOST": 4}


class MatmulAlgo(Structure):
    """``cublasLtMatmulAlgo_t``: an opaque algorithm description (64 bytes, CUDA 12 and 13)."""

    _fields_ = [("data", c_uint64 * 8)]


class MatmulHeuristicResult(Structure):
    """``cublasLtMatmulHeuristicResult_t``: one result of ``cublasLtMatmulAlgoGetHeuristic``.

    The fields ``algo``, ``workspace_size`` and ``waves_count`` are valid only where
    ``state`` is 0 (``CUBLAS_STATUS_SUCCESS``).
    """

    _fields_ = [("algo", MatmulAlgo), ("workspace_size", c_size_t), ("state", c_int),
                ("waves_count", c_float), ("reserved", c_int * 4)]


_h = c_void_p  # cublasLtHandle_t, and the descriptor handles
_p = c_void_p
_size_p = POINTER(c_size_t)

FUNCTIONS = (
    # cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle);
    Function("create", ("cublasLtCreate",), (POINTER(_h),)),
    # cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle);
    Function("destroy", ("cublasLtDestroy",), (_h,)),
    # size_t cublasLtGetVersion(void);
    Function("get_version", ("cublasLtGetVersion",), (), restype=c_size_t),
    # size_t cublasLtGetCudartVersion(void);
    Function("get_cudart_version", ("cublasLtGetCudartVersion",), (), restype=c_size_t),
    # cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int *value);
    Function("get_property", ("cublasLtGetProperty",), (c_int, POINTER(c_int))),
    # const char *cublasLtGetStatusName(cublasStatus_t status);
    Function("get_status_name", ("cublasLtGetStatusName",), (c_int,), restype=c_char_p),
    # cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
    #     cublasComputeType_t computeType, cudaDataType_t scaleType);
    Function("matmul_desc_create", ("cublasLtMatmulDescCreate",), (POINTER(_h), c_int, c_int)),
    # cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc);
    Function("matmul_desc_destroy", ("cublasLtMatmulDescDestroy",), (_h,)),
    # cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
    #     cublasLtMatmulDescAttributes_t attr, const void *buf, size_t sizeInBytes);
    Function("matmul_desc_set_attribute", ("cublasLtMatmulDescSetAttribute",),
             (_h, c_int, _p, c_size_t)),
    # cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
    #     cublasLtMatmulDescAttributes_t attr, void *buf, size_t sizeInBytes,
    #     size_t *sizeWritten);
    Function("matmul_desc_get_attribute", ("cublasLtMatmulDescGetAttribute",),
             (_h, c_int, _p, c_size_t, _size_p)),
    # cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
    #     cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld);
    Function("matrix_layout_create", ("cublasLtMatrixLayoutCreate",),
             (POINTER(_h), c_int, c_uint64, c_uint64, c_int64)),
    # cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout);
    Function("matrix_layout_destroy", ("cublasLtMatrixLayoutDestroy",), (_h,)),
    # cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
    #     cublasLtMatrixLayoutAttribute_t attr, const void *buf, size_t sizeInBytes);
    Function("matrix_layout_set_attribute", ("cublasLtMatrixLayoutSetAttribute",),
             (_h, c_int, _p, c_size_t)),
    # cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
    #     cublasLtMatrixLayoutAttribute_t attr, void *buf, size_t sizeInBytes,
    #     size_t *sizeWritten);
    Function("matrix_layout_get_attribute", ("cublasLtMatrixLayoutGetAttribute",),
             (_h, c_int, _p, c_size_t, _size_p)),
    # cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref);
    Function("matmul_preference_create", ("cublasLtMatmulPreferenceCreate",), (POINTER(_h),)),
    # cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref);
    Function("matmul_preference_destroy", ("cublasLtMatmulPreferenceDestroy",), (_h,)),
    # cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
    #     cublasLtMatmulPreferenceAttributes_t attr, const void *buf, size_t sizeInBytes);
    Function("matmul_preference_set_attribute", ("cublasLtMatmulPreferenceSetAttribute",),
             (_h, c_int, _p, c_size_t)),
    # cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle,
    #     cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    #     cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
    #     cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference,
    #     int requestedAlgoCount, cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
    #     int *returnAlgoCount);
    Function("matmul_algo_get_heuristic", ("cublasLtMatmulAlgoGetHeuristic",),
             (_h, _h, _h, _h, _h, _h, _h, c_int, POINTER(MatmulHeuristicResult),
              POINTER(c_int))),
    # cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle,
    #     cublasLtMatmulDesc_t computeDesc, const void *alpha, const void *A,
    #     cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,
    #     const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
    #     cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,
    #     size_t workspaceSizeInBytes, cudaStream_t stream);
    # (the algorithm is passed by its address, an int: every argument is one machine word,
    # which the call shim takes)
    Function("matmul", ("cublasLtMatmul",),
             (_h, _h, _p, _p, _h, _p, _h, _p, _p, _h, _p, _h, _p, _p, c_size_t, _p)),
)

lib = Library("cublasLt", FUNCTIONS, STATUS_NAMES)


def version():
    """The cuBLASLt version as an integer, ``major * 10000 + minor * 100 + patch``.

    ``cublasLtGetVersion`` needs no handle and no GPU.

    Examples
    --------
    >>> from accelmath.bindings import cublaslt
    >>> cublaslt.version() >= 120000
    True
    """
    return lib.get_version()
