"""The lag rules: the normal equations filled from correlation maps at a few lags equal the
dense design matrix's A^T A and A^T t; the pruned DFT gives the correlation at those lags."""

import numpy as np
import pytest
from _oracle import design

from accelmath.errors import InvalidArgumentError
from accelmath.subtraction import Subtractor, synthetic_pair
from accelmath.subtraction._model import LagRules, configure, terms
from accelmath.subtraction._ops import kind_of
from accelmath.subtraction._solve import assemble, background_products
from accelmath.subtraction._spectra import HOST_CHUNK_BYTES, Spectra, lag_matrices

CONFIGURATIONS = [dict(half_width=w, kernel_order=dk, background_order=db)
                  for w, dk, db in [(2, 0, 0), (2, 1, 1), (3, 2, 0), (2, 2, 1), (4, 1, 0)]]


def normal_equations(image, other, mask, configuration):
    rules = LagRules.of(configuration)
    kind = kind_of(None)
    spectra = Spectra(configuration, rules, kind, chunk_bytes=50_000)  # (several row blocks)
    spectra.fill(image, other, mask)
    spectra.transform()
    return assemble(kind, rules, rules.on(kind.asarray), spectra.correlations(),
                    spectra.polynomial_correlations(), background_products(configuration))


def test_host_products_run_in_blocks_of_the_host_size():
    """On the CPU the spectrum products of a 1024^2 pair run in blocks of at most
    HOST_CHUNK_BYTES (the GPU's 256 MiB would take the whole image at once)."""
    configuration = configure((1024, 1024))
    spectra = Spectra(configuration, LagRules.of(configuration), kind_of(None))
    block = spectra.rows * spectra.maps * (1024 // 2 + 1) * 16
    assert spectra.rows < 1024 and block <= HOST_CHUNK_BYTES
    assert (spectra.rows + 1) * spectra.maps * (1024 // 2 + 1) * 16 > HOST_CHUNK_BYTES


@pytest.mark.parametrize("options", CONFIGURATIONS)
@pytest.mark.parametrize("shape", [(36, 36), (37, 40)])
def test_normal_equations_equal_the_dense_design(options, shape):
    rng = np.random.default_rng()
    configuration = configure(shape, **options)
    image, other = rng.standard_normal((2,) + shape) + 1.0
    mask = rng.random(shape) > 0.3
    matrix, rhs = normal_equations(image, other, mask, configuration)
    a, t = design(image, other, mask, configuration)
    gram = a.T @ a
    np.testing.assert_allclose(matrix, gram, rtol=0, atol=1e-11 * np.abs(gram).max())
    np.testing.assert_allclose(rhs, a.T @ t, rtol=0, atol=1e-11 * np.abs(a.T @ t).max())


@pytest.mark.parametrize("shape", [(8, 6), (9, 7)])
def test_lag_matrices_give_the_correlation(shape):
    rng = np.random.default_rng()
    x, y = rng.standard_normal((2,) + shape)
    lags = np.arange(-2, 3)
    e1t, e2 = lag_matrices(shape, lags)
    maps = (e1t.T @ (np.conj(np.fft.rfft2(x)) * np.fft.rfft2(y)) @ e2).real
    for i, l0 in enumerate(lags):
        for j, l1 in enumerate(lags):
            direct = np.sum(x * np.roll(y, (-l0, -l1), axis=(0, 1)))
            assert maps[i, j] == pytest.approx(direct, abs=1e-12 * np.abs(x).sum())


def test_constraint_drops_the_kernel_sums_of_the_spatial_terms():
    configuration = configure(40, half_width=2, kernel_order=2, constant_ratio=True)
    rules = LagRules.of(configuration)
    dropped = sorted(set(range(rules.count)) - set(rules.free.tolist()))
    assert dropped == [k * 25 + 12 for k in range(1, 6)]
    assert LagRules.of(configure(40, half_width=2, constant_ratio=False)).free.size == rules.count


def test_terms_in_the_published_order():
    assert terms(2) == ((0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0))


@pytest.mark.parametrize("options, words", [
    (dict(shape=16, half_width=4), "too large"),
    (dict(shape=64, half_width=-1), "half_width"),
    (dict(shape=64, kernel_order=1.5), "kernel_order"),
    (dict(shape=64, solver="qr"), "solver"),
    (dict(shape=64, convolve="both"), "convolve"),
    (dict(shape=(64, 64, 3)), "shape"),
    (dict(shape=64, constant_ratio="yes"), "constant_ratio"),
])
def test_configuration_errors_name_the_value(options, words):
    with pytest.raises(InvalidArgumentError, match=words):
        configure(**options)


@pytest.mark.parametrize("call, message", [
    (lambda: configure(64, half_width=True), "half_width must be an integer, got True"),
    (lambda: configure(64, kernel_order=-2), "kernel_order must be at least 0, got -2"),
    (lambda: configure((64, 0)), "each length of shape must be at least 1, got 0"),
    (lambda: configure(64, constant_ratio=1), "constant_ratio must be True or False, got 1"),
    (lambda: Subtractor(64, half_width=3, chunk_bytes=0), "chunk_bytes must be at least 1, got 0"),
    (lambda: synthetic_pair(64, stars=2.0), "stars must be an integer, got 2.0"),
    (lambda: synthetic_pair(64, kernel_half_width=-1), "kernel_half_width must be at least 0"),
])
def test_the_showcase_checks_its_own_counts_and_lengths(call, message):
    with pytest.raises(InvalidArgumentError, match=message):
        call()


def test_numpy_integers_and_booleans_are_taken():
    configuration = configure(np.int64(64), half_width=np.int32(3), constant_ratio=np.True_)
    assert (configuration.shape, configuration.half_width) == ((64, 64), 3)
