"""The cuBLASLt entries matrix products use: declared, resolvable in the CUDA 12 library, and
word-sized arguments (the call shim takes them)."""

import ctypes

import pytest

from accelmath.bindings import cublaslt

USED = ("create", "destroy", "matmul_desc_create", "matmul_desc_destroy",
        "matmul_desc_set_attribute", "matrix_layout_create", "matrix_layout_destroy",
        "matrix_layout_set_attribute", "matmul_preference_create", "matmul_preference_destroy",
        "matmul_preference_set_attribute", "matmul_algo_get_heuristic", "matmul")


@pytest.mark.parametrize("name", USED)
def test_declared_and_resolvable(name, loaded_lib):
    lib = loaded_lib("cublaslt")
    assert name in lib.functions
    assert callable(lib.bind(name))


def test_hot_path_entries_take_words():
    words = {ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t}
    for name in ("matmul", "matmul_desc_set_attribute"):
        assert set(cublaslt.lib.functions[name].argtypes) <= words, name
    assert len(cublaslt.lib.functions["matmul"].argtypes) == 16


def test_structures():
    assert ctypes.sizeof(cublaslt.MatmulAlgo) == 64
    assert cublaslt.EPILOGUE["GELU_AUX_BIAS"] == 164 and cublaslt.EPILOGUE["BGRADB"] == 512
