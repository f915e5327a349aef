"""The subtraction on the CPU against a float64 oracle (the model as a dense design matrix,
solved by numpy.linalg.lstsq), and on synthetic pairs of known kernel, ratio and transient."""

import numpy as np
import pytest
import scipy.ndimage
from _oracle import difference, least_squares, pair

from accelmath.subtraction import Subtractor, subtract, synthetic_pair
from accelmath.subtraction._model import configure

CASES = [((64, 64), dict(half_width=2, kernel_order=0, background_order=0)),
         ((64, 60), dict(half_width=3, kernel_order=1, background_order=1)),
         ((72, 64), dict(half_width=2, kernel_order=2, background_order=0)),
         ((64, 64), dict(half_width=4, kernel_order=2, background_order=1))]


def random_kernel(rng, half_width):
    kernel = rng.random((2 * half_width + 1,) * 2) * 0.1
    kernel[half_width, half_width] += 1.0
    return kernel


@pytest.mark.parametrize("constant_ratio", [True, False])
@pytest.mark.parametrize("shape, options", CASES)
def test_solution_and_difference_equal_least_squares(shape, options, constant_ratio):
    rng = np.random.default_rng()
    options = dict(options, constant_ratio=constant_ratio)
    configuration = configure(shape, **options)
    image, other = pair(rng, shape, random_kernel(rng, options["half_width"]))
    mask = rng.random(shape) > 0.4
    result = subtract(image, other, mask=mask, **options)
    expected = least_squares(image, other, mask, configuration)
    n = result.coefficients.size
    ours = np.concatenate([result.coefficients.ravel(), result.background])
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-9 * np.abs(expected[:n]).max())
    d = difference(image, other, expected, configuration)
    np.testing.assert_allclose(result.difference, d, rtol=0, atol=1e-9 * np.abs(d).max())


def test_without_a_mask_the_whole_image_is_fitted():
    rng = np.random.default_rng()
    configuration = configure((48, 48), half_width=2, kernel_order=1)
    image, other = pair(rng, (48, 48), random_kernel(rng, 2))
    result = subtract(image, other, half_width=2, kernel_order=1)
    expected = least_squares(image, other, None, configuration)
    np.testing.assert_allclose(result.coefficients.ravel(), expected[:-1], rtol=0,
                               atol=1e-9 * np.abs(expected).max())


def test_lu_equals_cholesky():
    rng = np.random.default_rng()
    image, other = pair(rng, (64, 64), random_kernel(rng, 3))
    mask = rng.random((64, 64)) > 0.3
    options = dict(half_width=3, kernel_order=2, background_order=1)
    a = subtract(image, other, mask=mask, solver="cholesky", **options)
    b = subtract(image, other, mask=mask, solver="lu", **options)
    np.testing.assert_allclose(a.coefficients, b.coefficients, rtol=0,
                               atol=1e-9 * np.abs(a.coefficients).max())
    np.testing.assert_allclose(a.difference, b.difference, rtol=0,
                               atol=1e-9 * np.abs(a.difference).max())


def test_convolving_the_science_image_swaps_the_roles():
    rng = np.random.default_rng()
    image, other = pair(rng, (48, 48), random_kernel(rng, 2))
    options = dict(half_width=2, kernel_order=1)
    swapped = subtract(other, image, convolve="science", **options)
    direct = subtract(image, other, **options)
    # the difference keeps the sign of a transient in the science image
    np.testing.assert_allclose(swapped.difference, -direct.difference, rtol=0,
                               atol=1e-9 * np.abs(direct.difference).max())
    assert swapped.ratio == pytest.approx(direct.ratio, rel=1e-10)


@pytest.mark.parametrize("kernel_order", [0, 2])
def test_known_kernel_and_ratio_are_recovered(kernel_order):
    seed = int(np.random.SeedSequence().entropy % 2**32)
    made = synthetic_pair(64, seed=seed, stars=300, noise=0.0, ratio=1.7, kernel_half_width=3,
                          transient_flux=0.0)
    result = subtract(made.reference, made.science, half_width=3, kernel_order=kernel_order)
    assert result.ratio == pytest.approx(1.7, rel=1e-7), seed
    # The spatial terms make the normal equations ill-conditioned (noise-free data, a few
    # hundred stars): over 80 seeds the kernel's largest error at the corners was 5e-5 of a
    # kernel summing to 1.7, where a wrong model errs by 1e-2 or more.
    for row, col in [(0, 0), (32, 40), (63, 63)]:
        np.testing.assert_allclose(result.kernel_at(row, col), made.kernel, rtol=0,
                                   atol=1e-5 if kernel_order == 0 else 5e-4,
                                   err_msg=f"seed {seed}")
    assert np.abs(result.difference).max() < 1e-6 * np.abs(made.science).max()


def test_residual_matches_the_propagated_noise_and_shows_the_transient():
    seed = int(np.random.SeedSequence().entropy % 2**32)
    made = synthetic_pair(192, seed=seed, stars=300, noise=(0.2, 3.0))
    result = subtract(made.reference, made.science, mask=made.mask, half_width=7,
                      kernel_order=1)
    assert result.ratio == pytest.approx(made.ratio, rel=0.02), seed
    rows, cols = np.ogrid[:192, :192]
    row, col, _ = made.transient
    away = (rows - row) ** 2 + (cols - col) ** 2 > 12 ** 2
    measured = float(np.std(result.difference[away]))
    expected = made.expected_noise(result.kernel_at(96, 96))
    assert measured == pytest.approx(expected, rel=0.05), seed
    smoothed = scipy.ndimage.gaussian_filter(result.difference, made.sigma_science, mode="wrap")
    peak = np.unravel_index(np.argmax(smoothed), smoothed.shape)
    assert np.hypot(peak[0] - row, peak[1] - col) <= 2 * made.sigma_science, seed


def test_integer_images_are_promoted():
    rng = np.random.default_rng()
    image, other = pair(rng, (48, 48), random_kernel(rng, 2), noise=1.0)
    image, other = np.round(image * 100).astype(np.int32), np.round(other * 100).astype(np.int64)
    result = subtract(image, other, half_width=2)
    expected = subtract(image.astype(np.float64), other.astype(np.float64), half_width=2)
    assert result.difference.dtype == np.float64
    np.testing.assert_array_equal(result.difference, expected.difference)


def test_a_subtractor_reused_gives_what_single_calls_give():
    rng = np.random.default_rng()
    options = dict(half_width=2, kernel_order=1, background_order=1)
    pairs = [pair(rng, (48, 40), random_kernel(rng, 2)) + (rng.random((48, 40)) > 0.3,)
             for _ in range(3)]
    with Subtractor((48, 40), **options) as subtractor:
        results = [subtractor.subtract(i, j, mask=m, timings=True) for i, j, m in pairs]
    for (i, j, m), result in zip(pairs, results):
        single = subtract(i, j, mask=m, **options)
        np.testing.assert_array_equal(result.difference, single.difference)
        np.testing.assert_array_equal(result.coefficients, single.coefficients)
        assert list(result.timings) == ["planes", "transforms", "products", "solve", "subtract"]
        assert single.timings == {}


def test_torch_cpu_tensors_come_back_as_tensors():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    image, other = pair(rng, (40, 40), random_kernel(rng, 2))
    mask = rng.random((40, 40)) > 0.3
    ours = subtract(torch.from_numpy(image), torch.from_numpy(other),
                    mask=torch.from_numpy(mask), half_width=2)
    expected = subtract(image, other, mask=mask, half_width=2)
    assert isinstance(ours.difference, torch.Tensor)
    np.testing.assert_allclose(ours.difference.numpy(), expected.difference, rtol=0,
                               atol=1e-9 * np.abs(expected.difference).max())


def test_blocks_of_rows_and_planes_one_at_a_time_change_nothing(monkeypatch):
    from accelmath.subtraction import _spectra

    rng = np.random.default_rng()
    image, other = pair(rng, (50, 44), random_kernel(rng, 3))
    mask = rng.random((50, 44)) > 0.3
    options = dict(half_width=3, kernel_order=2, background_order=1)
    whole = subtract(image, other, mask=mask, **options)
    monkeypatch.setattr(_spectra, "BATCH_BYTES", 0)
    with Subtractor((50, 44), chunk_bytes=20_000, **options) as subtractor:
        assert subtractor._engine is None
        parts = subtractor.subtract(image, other, mask=mask)
        assert subtractor._engine[1].batch == 1 and subtractor._engine[1].rows < 50
    np.testing.assert_allclose(parts.difference, whole.difference, rtol=0,
                               atol=1e-10 * np.abs(whole.difference).max())
    np.testing.assert_allclose(parts.coefficients, whole.coefficients, rtol=0,
                               atol=1e-10 * np.abs(whole.coefficients).max())
