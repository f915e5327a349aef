"""accelmath's subtraction against the published SFFT code on the same pair.

The published code is ``sfft-romansnpit`` (the Roman fork of SFFT that PHROSTY runs); these
tests skip where it does not import. Each test makes a fresh synthetic pair, subtracts it with
both codes in the same configuration (the reference convolved; the published code takes the
images with the pixels outside the mask set to 0, accelmath takes the mask), and compares the
difference images, the photometric ratios, the kernel coefficients and the background. The
published solution holds the kernel coefficients times N0*N1 (its solution reader divides them);
its background coefficients are as they are.
"""

import contextlib
import io

import numpy as np
import pytest

try:
    import sfft  # noqa: F401  (its package imports astropy, sep, fastremap, numba, ...)
except Exception as exc:  # not installed, or a needed package that fails on import
    pytest.skip(f"the published SFFT code does not import: {type(exc).__name__}: {exc}",
                allow_module_level=True)

from accelmath import subtraction

TOLERANCE = 1e-6
PHROSTY = {"half_width": 9, "kernel_order": 2, "background_order": 0, "constant_ratio": True}
# a second configuration: a spatially varying ratio and a background polynomial, on a
# rectangular image, so that the coordinate conventions of both axes are exercised
VARYING = {"half_width": 4, "kernel_order": 1, "background_order": 2, "constant_ratio": False}


def fresh_seed():
    return int(np.random.SeedSequence().entropy % 2**32)


def published_configuration(shape, configuration, backend):
    from sfft.sfftcore.SFFTConfigure import SingleSFFTConfigure

    options = {"BACKEND_4SUBTRACT": backend}
    if backend == "Numpy":
        # no disk cache: nothing written next to the installed package
        options.update(NUM_CPU_THREADS_4SUBTRACT=2, NUMBA_CACHE=False)
    with contextlib.redirect_stdout(io.StringIO()):
        return SingleSFFTConfigure.SSC(
            NX=shape[0], NY=shape[1], KerHW=configuration["half_width"],
            KerPolyOrder=configuration["kernel_order"],
            BGPolyOrder=configuration["background_order"],
            ConstPhotRatio=configuration["constant_ratio"], VERBOSE_LEVEL=0, **options)


def published_cpu(reference, science, mask, sfft_configuration):
    from sfft.sfftcore.SFFTSubtract import GeneralSFFTSubtract

    with contextlib.redirect_stdout(io.StringIO()):
        solution, difference, _ = GeneralSFFTSubtract.GSS(
            PixA_I=reference, PixA_J=science, PixA_mI=np.where(mask, reference, 0.0),
            PixA_mJ=np.where(mask, science, 0.0), SFFTConfig=sfft_configuration,
            BACKEND_4SUBTRACT="Numpy", NUM_CPU_THREADS_4SUBTRACT=2, VERBOSE_LEVEL=0)
    return solution, difference


def published_gpu(cp, reference, science, mask, configuration):
    from sfft.PureCupyCustomizedPacket import PureCupy_Customized_Packet

    with contextlib.redirect_stdout(io.StringIO()):
        solution, difference = PureCupy_Customized_Packet.PCCP(
            reference, science, cp.where(mask, reference, 0.0), cp.where(mask, science, 0.0),
            ForceConv="REF", GKerHW=configuration["half_width"],
            KerPolyOrder=configuration["kernel_order"],
            BGPolyOrder=configuration["background_order"],
            ConstPhotRatio=configuration["constant_ratio"], VERBOSE_LEVEL=0)
    return cp.asnumpy(solution), cp.asnumpy(difference)


def published_terms(solution, shape, configuration):
    """The published solution as (coefficients c[ij, a, b], background d_pq), in accelmath's
    normalization."""
    side = 2 * configuration["half_width"] + 1
    order = configuration["kernel_order"]
    terms = (order + 1) * (order + 2) // 2
    kernel = solution[:terms * side * side].reshape(terms, side, side) / (shape[0] * shape[1])
    return kernel, solution[terms * side * side:]


def published_ratio(coefficients, shape, configuration):
    """The published photometric ratio at the image's centre: the kernel's sum, the constant
    basis coefficient's polynomial, at the scaled coordinates (row + 1) / N0, (col + 1) / N1."""
    w, order = configuration["half_width"], configuration["kernel_order"]
    x, y = (shape[0] // 2 + 1) / shape[0], (shape[1] // 2 + 1) / shape[1]
    powers = [(i, j) for i in range(order + 1) for j in range(order + 1 - i)]
    return sum(coefficients[k, w, w] * x ** i * y ** j for k, (i, j) in enumerate(powers))


def relative(ours, theirs):
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    return float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))


def compare(result, difference, solution, shape, configuration, seed):
    """accelmath's result against the published difference and solution, to TOLERANCE."""
    kernel, background = published_terms(solution, shape, configuration)
    ours = {"difference": (np.asarray(result["difference"]), difference),
            "coefficients": (np.asarray(result["coefficients"]), kernel),
            "background": (np.ravel(result["background"]), background)}
    gaps = {name: relative(a, b) for name, (a, b) in ours.items()}
    gaps["ratio"] = abs(result["ratio"] / published_ratio(kernel, shape, configuration) - 1)
    worst = {name: gap for name, gap in gaps.items() if not gap <= TOLERANCE}
    assert not worst, f"seed {seed}: relative gaps {gaps}"


@pytest.mark.parametrize("configuration, shape",
                         [(PHROSTY, (256, 256)), (VARYING, (192, 160))],
                         ids=["phrosty-256", "varying-192x160"])
def test_cpu_agrees_with_published_numpy_backend(configuration, shape):
    seed = fresh_seed()
    pair = subtraction.synthetic_pair(shape, seed=seed)
    result = subtraction.subtract(pair.reference, pair.science, mask=pair.mask, **configuration)
    assert result.coefficients.shape == (
        (configuration["kernel_order"] + 1) * (configuration["kernel_order"] + 2) // 2,
        2 * configuration["half_width"] + 1, 2 * configuration["half_width"] + 1)
    solution, difference = published_cpu(
        pair.reference, pair.science, pair.mask,
        published_configuration(shape, configuration, "Numpy"))
    compare({"difference": result.difference, "coefficients": result.coefficients,
             "background": result.background, "ratio": result.ratio},
            difference, solution, shape, configuration, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("configuration, shape",
                         [(PHROSTY, (512, 512)), (VARYING, (384, 320))],
                         ids=["phrosty-512", "varying-384x320"])
def test_gpu_agrees_with_published_cupy_backend(cp, configuration, shape):
    seed = fresh_seed()
    pair = subtraction.synthetic_pair(shape, seed=seed, like=cp)
    with subtraction.Subtractor(shape, **configuration, like=cp) as subtractor:
        result = subtractor.subtract(pair.reference, pair.science, mask=pair.mask)
        assert isinstance(result.difference, cp.ndarray)
        ours = {"difference": cp.asnumpy(result.difference),
                "coefficients": result.coefficients, "background": result.background,
                "ratio": result.ratio}
    solution, difference = published_gpu(cp, pair.reference, pair.science, pair.mask,
                                         configuration)
    compare(ours, difference, solution, shape, configuration, seed)
