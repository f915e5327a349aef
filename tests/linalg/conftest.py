"""The array packages of the GPU tests of accelmath.linalg as fixtures: ``cupy`` (CuPy), and
``package`` (torch CUDA tensors, JAX GPU arrays, Numba device arrays); each skips where its package, or its
GPU support, is missing."""

import pytest

from .gpu.gpu_cases import CuPy, JaxGpu, NumbaGpu, TorchCuda


@pytest.fixture
def cupy(cp):
    return CuPy(cp)


@pytest.fixture(params=["torch", "jax", "numba"])
def package(request):
    if request.param == "torch":
        return TorchCuda(request.getfixturevalue("torch_cuda"))
    if request.param == "numba":
        return NumbaGpu(request.getfixturevalue("numba_cuda"))
    return JaxGpu(request.getfixturevalue("jax_gpu"))
