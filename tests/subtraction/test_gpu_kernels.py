"""The subtraction's GPU kernels: their source compiles without a GPU, their struct matches
the source's, and on a GPU each pass equals the CPU path's package operations, the normal
equations the dense design's A^T A and A^T t."""

import ctypes

import numpy as np
import pytest
from _oracle import design

from accelmath._core.gpu.modules import CompileOptions, compile_cuda
from accelmath.subtraction import _kernels
from accelmath.subtraction._model import LagRules, configure
from accelmath.subtraction._ops import kind_of
from accelmath.subtraction._solve import background_products
from accelmath.subtraction._spectra import Spectra


@pytest.mark.parametrize("arch", [(8, 0), (9, 0)])
def test_the_source_compiles_without_a_gpu(arch, nvrtc):
    assert compile_cuda(_kernels.SOURCE, CompileOptions(arch=arch))[:4] == b"\x7fELF"
    for name in _kernels._NAMES:
        assert f'extern "C" __global__ void {name}(' in _kernels.SOURCE


def test_the_struct_matches_the_source():
    struct = _kernels.SOURCE.split("struct Normal {")[1].split("};")[0]
    declared = []
    for line in struct.splitlines():
        code = line.split("//")[0].strip().rstrip(";")
        if code:
            first, *others = code.split(",")
            declared += [first.split()[-1].lstrip("*")] + [name.strip() for name in others]
    assert declared == [name for name, _ in _kernels.Normal._fields_]
    # 9 pointers, then 10 long longs
    assert ctypes.sizeof(_kernels.Normal) == 19 * 8
    assert all(kind is ctypes.c_void_p for _, kind in _kernels.Normal._fields_[:9])


def test_extra_index_names_each_pair_and_background_term():
    configuration = configure(40, half_width=2, kernel_order=1, background_order=1)
    rules = LagRules.of(configuration)
    extra = _kernels.extra_index(rules, configuration)
    assert extra["pair_of"].tolist() == [[0, 1, 2], [-1, 3, 4], [-1, -1, 5]]
    assert extra["background_terms"].tolist() == [[0, 0], [0, 1], [1, 0]]


def _both(configuration, image, other, mask, package):
    """The CPU's and the GPU's Spectra (several row blocks), filled and transformed."""
    rules = LagRules.of(configuration)
    made = []
    for kind, arrays in ((kind_of(None), (image, other, mask)),
                         (kind_of(package), [package.asarray(a) if package.__name__ == "cupy"
                                             else package.from_numpy(a).cuda()
                                             for a in (image, other, mask)])):
        maps = len(rules.pairs[0]) + len(configuration.kernel_terms)
        rows = 10  # (several row blocks)
        spectra = Spectra(configuration, rules, kind,
                          chunk_bytes=rows * maps * (image.shape[1] // 2 + 1) * 16)
        selected = spectra.fill(*arrays)
        spectra.transform()
        made.append((kind, spectra, selected))
    return rules, made


def _host(x):
    return x.get() if hasattr(x, "get") else x.cpu().numpy() if hasattr(x, "cpu") else x


@pytest.fixture(params=["cp", "torch_cuda"])
def package(request):
    return request.getfixturevalue(request.param)


@pytest.mark.gpu
@pytest.mark.parametrize("options", [dict(half_width=3, kernel_order=2, background_order=0),
                                     dict(half_width=2, kernel_order=1, background_order=2,
                                          constant_ratio=False)])
def test_each_pass_equals_the_cpu_path(package, options):
    rng = np.random.default_rng()
    shape = (45, 38)
    configuration = configure(shape, **options)
    image, other = rng.standard_normal((2,) + shape) + 1.0
    mask = rng.random(shape) > 0.3
    rules, ((_, cpu, cpu_count), (kind, gpu, gpu_count)) = _both(configuration, image, other,
                                                                 mask, package)
    assert gpu.rows < shape[0]  # several row blocks
    assert int(_host(gpu_count)) == mask.sum() == float(cpu_count)
    np.testing.assert_array_equal(_host(gpu.stack), cpu.stack)
    scale = np.abs(cpu.spectra).max()
    np.testing.assert_allclose(_host(gpu.spectra), cpu.spectra, rtol=0, atol=1e-13 * scale)
    maps = cpu.correlations()
    np.testing.assert_allclose(_host(gpu.correlations()), maps, rtol=0,
                               atol=1e-12 * np.abs(maps).max())
    side = configuration.side
    kernels = rng.standard_normal((side, len(configuration.kernel_terms) * side)) + 0j
    background = rng.standard_normal((configuration.background_order + 1,) * 2)
    for flip in (False, True):
        expected = cpu.difference(kernels, background, flip)
        ours = gpu.difference(kind.asarray(kernels), background, flip)
        np.testing.assert_allclose(_host(ours), expected, rtol=0,
                                   atol=1e-12 * np.abs(expected).max())


@pytest.mark.gpu
@pytest.mark.parametrize("symmetric", [False, True])
def test_the_normal_system_equals_the_dense_design(package, symmetric):
    rng = np.random.default_rng()
    shape = (40, 37)
    configuration = configure(shape, half_width=2, kernel_order=2, background_order=1)
    image, other = rng.standard_normal((2,) + shape) + 1.0
    mask = rng.random(shape) > 0.3
    rules, (_, (kind, gpu, _)) = _both(configuration, image, other, mask, package)
    index = rules.on(kind.asarray)
    index.update({name: kind.asarray(a)
                  for name, a in _kernels.extra_index(rules, configuration).items()})
    background = kind.asarray(background_products(configuration))
    description = _kernels.normal(gpu.correlations(), gpu.polynomial_correlations(),
                                  background, index, rules, configuration)
    nf = rules.free.size
    a, t = design(image, other, mask, configuration)
    gram, target = (a.T @ a)[np.ix_(rules.free, rules.free)], (a.T @ t)[rules.free]
    diagonal = kind.empty((nf,))
    _kernels.normal_diagonal(description, index["free"], diagonal)
    np.testing.assert_allclose(_host(diagonal), gram.diagonal(), rtol=1e-11)
    scale = rng.random(nf) + 0.5
    matrix, rhs = kind.empty((nf, nf)), kind.empty((nf,))
    _kernels.normal_system(description, index["free"], kind.asarray(scale), symmetric, matrix,
                           rhs)
    expected = gram * scale[:, None] * scale[None, :]
    np.testing.assert_allclose(_host(matrix), expected, rtol=0,
                               atol=1e-11 * np.abs(expected).max())
    np.testing.assert_allclose(_host(rhs), target * scale, rtol=0,
                               atol=1e-11 * np.abs(target).max())
    if symmetric:
        assert np.array_equal(_host(matrix), _host(matrix).T)
    out = kind.empty((nf,))
    _kernels.diagonal(matrix, nf + 1, out)
    np.testing.assert_array_equal(_host(out), _host(matrix).diagonal())
