"""The stateful FFT plan on the CPU path, against numpy.fft."""

import numpy as np
import pytest
from closeness import assert_close

import accelmath.fft
from accelmath.errors import (InvalidArgumentError, StateError, UnsupportedDTypeError,
                              UnsupportedOperandError)
from accelmath.fft import FFT

NORMS = [None, "backward", "ortho", "forward"]


def complex_data(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("axes", [None, (0,), (1,), (2, 0), (-1, -2), (0, 1, 2)])
@pytest.mark.parametrize("norm", NORMS)
def test_c2c_round_trip(axes, norm):
    rng = np.random.default_rng([len(axes or ()), NORMS.index(norm)])
    x = complex_data(rng, (4, 6, 5))
    numpy_axes = axes if axes is not None else (0, 1, 2)
    with FFT(x, axes=axes, norm=norm) as plan:
        assert plan.kind == "c2c"
        y = plan.forward()
        assert_close(y, np.fft.fftn(x, axes=numpy_axes, norm=norm), same_type=True)
        assert_close(plan.inverse(y), x, same_type=True)
        assert_close(plan.execute(y, direction="inverse"),
                     np.fft.ifftn(y, axes=numpy_axes, norm=norm), same_type=True)


def test_kind_inference():
    rng = np.random.default_rng(1)
    assert FFT(complex_data(rng, (8,))).kind == "c2c"
    assert FFT(rng.standard_normal(8)).kind == "r2c"
    assert FFT(rng.standard_normal(8).astype(np.float32)).kind == "r2c"
    assert FFT(complex_data(rng, (8,)), kind="c2r").kind == "c2r"


@pytest.mark.parametrize("norm", NORMS)
def test_r2c(norm):
    x = np.random.default_rng(2).standard_normal((6, 9))
    with FFT(x, axes=(0, 1), norm=norm) as plan:
        assert_close(plan.forward(), np.fft.rfftn(x, axes=(0, 1), norm=norm), same_type=True)
        assert_close(plan.execute(), np.fft.rfftn(x, axes=(0, 1), norm=norm), same_type=True)


@pytest.mark.parametrize("last_axis_size", [None, 1, 2, 9, 10])
@pytest.mark.parametrize("norm", NORMS)
def test_c2r_odd_and_even_lengths(last_axis_size, norm):
    rng = np.random.default_rng([last_axis_size or 0, NORMS.index(norm)])
    size = last_axis_size or 10
    x = np.fft.rfftn(rng.standard_normal((4, size)))
    with FFT(x, kind="c2r", axes=(0, 1), norm=norm, last_axis_size=last_axis_size) as plan:
        assert plan.get_output_layout()[0] == (4, size)
        y = plan.inverse()
        assert_close(y, np.fft.irfftn(x, s=(4, size), axes=(0, 1), norm=norm), same_type=True)
        assert_close(plan.execute(), y, same_type=True)


def test_r2c_then_c2r_round_trip():
    x = np.random.default_rng(3).standard_normal((5, 7))
    with FFT(x) as forward:
        spectrum = forward.forward()
    with FFT(spectrum, kind="c2r", last_axis_size=7) as inverse:
        assert_close(inverse.inverse(), x, same_type=True)


def test_execute_on_new_operands_of_the_same_layout():
    rng = np.random.default_rng(4)
    plan = FFT(complex_data(rng, (3, 16)), axes=(1,))
    for _ in range(3):
        x = complex_data(rng, (3, 16))
        assert_close(plan.forward(x), np.fft.fft(x, axis=1), same_type=True)
    real_plan = FFT(rng.standard_normal((3, 16)), axes=(1,))
    x = rng.standard_normal((3, 16))
    assert_close(real_plan.forward(x), np.fft.rfft(x, axis=1), same_type=True)


def test_out_is_written_and_returned():
    rng = np.random.default_rng(5)
    x = complex_data(rng, (4, 8))
    plan = FFT(x)
    out = np.empty((4, 8), np.complex128)
    assert plan.forward(out=out) is out
    assert_close(out, np.fft.fft2(x), same_type=True)


def test_layouts():
    x = np.zeros((4, 6), np.complex128)
    plan = FFT(x)
    assert plan.get_input_layout() == ((4, 6), (6, 1))
    assert plan.get_output_layout() == ((4, 6), (6, 1))
    real = FFT(np.zeros((4, 6)), axes=(0, 1))
    assert real.get_output_layout() == ((4, 4), (4, 1))
    # a transposed input: the output is dense in the input's axis order
    transposed = FFT(np.zeros((6, 4)).T, axes=(0, 1))
    assert transposed.get_input_layout() == ((4, 6), (1, 4))
    assert transposed.get_output_layout() == ((4, 4), (1, 4))
    c2r = FFT(np.zeros((3, 5), np.complex128), kind="c2r", last_axis_size=9)
    assert c2r.get_output_layout() == ((3, 9), (9, 1))
    assert FFT(np.zeros((3, 5), np.complex128), kind="c2r").get_output_layout()[0] == (3, 8)


def test_context_manager_and_free():
    x = complex_data(np.random.default_rng(6), (8,))
    with FFT(x) as plan:
        plan.forward()
    with pytest.raises(StateError, match="freed"):
        plan.forward()
    plan.free()  # idempotent
    assert "freed" in repr(plan)
    assert plan.nbytes == 0


@pytest.mark.parametrize("kind, direction", [("r2c", "inverse"), ("c2r", "forward")])
def test_direction_must_fit_the_kind(kind, direction):
    x = np.zeros(8, np.complex128 if kind == "c2r" else np.float64)
    plan = FFT(x, kind=kind)
    with pytest.raises(InvalidArgumentError, match=f"direction '{direction}'.*{kind}"):
        plan.execute(direction=direction)


def test_invalid_direction():
    plan = FFT(np.zeros(8, np.complex128))
    with pytest.raises(InvalidArgumentError, match="Invalid direction 'sideways'"):
        plan.execute(direction="sideways")


def test_default_direction():
    rng = np.random.default_rng(7)
    x = complex_data(rng, (8,))
    assert_close(FFT(x).execute(), np.fft.fft(x), same_type=True)
    assert_close(FFT(x, kind="c2r").execute(), np.fft.irfft(x), same_type=True)


def test_conjugate_gives_hfft_and_ihfft():
    rng = np.random.default_rng(8)
    half = complex_data(rng, (9,))
    # hfft(x, norm) == irfft(conj(x), norm swapped)
    assert_close(FFT(half, kind="c2r", conjugate=True, norm="forward").execute(),
                 np.fft.hfft(half), same_type=True)
    real = rng.standard_normal(16)
    assert_close(FFT(real, conjugate=True, norm="forward").execute(),
                 np.fft.ihfft(real), same_type=True)


def test_workers():
    x = complex_data(np.random.default_rng(9), (4, 32))
    assert_close(FFT(x, workers=2).forward(), np.fft.fft2(x), same_type=True)


def test_torch_operands():
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 8, dtype=torch.complex128)
    with FFT(x, axes=(1,)) as plan:
        y = plan.forward()
        assert isinstance(y, torch.Tensor)
        assert_close(y.numpy(), np.fft.fft(x.numpy(), axis=1), same_type=True)
        z = plan.forward(torch.randn(4, 8, dtype=torch.complex128))
        assert isinstance(z, torch.Tensor)
        # out= of the operands' package is the result itself, for each way it is written
        for out in (torch.empty(4, 8, dtype=torch.complex128),  # (C order: written directly)
                    torch.empty(8, 4, dtype=torch.complex128).T):  # (copied in)
            assert plan.forward(x, out=out) is out
            assert_close(out.numpy(), np.fft.fft(x.numpy(), axis=1), same_type=True)


def test_single_precision_plan():
    x = complex_data(np.random.default_rng(10), (16,)).astype(np.complex64)
    plan = FFT(x)
    assert (plan.in_dtype, plan.out_dtype) == ("complex64", "complex64")
    y = plan.forward()
    assert y.dtype == np.complex64
    expected = np.fft.fft(x.astype(np.complex128))
    assert np.linalg.norm(y - expected) <= 1e-5 * np.linalg.norm(expected)


def test_repr():
    plan = FFT(np.zeros((2, 4)), axes=(1,))
    assert repr(plan) == ("FFT(kind=r2c, axes=(1,), shape=(2, 4), dtype=float64->complex128, "
                          "norm=backward, cpu)")


def test_stateless_functions_are_one_shot_plans():
    x = complex_data(np.random.default_rng(11), (4, 6))
    assert_close(accelmath.fft.fft2(x), FFT(x, axes=(-2, -1)).forward(), same_type=True)


@pytest.mark.parametrize("dtype, kind", [("complex128", "c2c"), (np.float32, "r2c"),
                                         ("complex64", "c2r")])
def test_plan_from_a_layout(dtype, kind):
    """A plan made from shape, dtype and strides, with no operand: it runs on operands of that
    layout, and needs one each time."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 10)) + (1j * rng.standard_normal((6, 10))
                                        if np.dtype(dtype).kind == "c" else 0)
    x = x.astype(dtype).T  # strides (1, 10): Fortran order
    plan = FFT(shape=(10, 6), dtype=dtype, strides=(1, 10), kind=kind, axes=(0, 1))
    assert plan.kind == kind and plan.get_input_layout() == ((10, 6), (1, 10))
    expected = {"c2c": np.fft.fft2, "r2c": np.fft.rfft2, "c2r": np.fft.irfft2}[kind](x)
    np.testing.assert_allclose(plan.execute(x), expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(InvalidArgumentError, match="pass x"):
        plan.execute()
    with pytest.raises(InvalidArgumentError, match="does not match the"):
        plan.execute(np.ascontiguousarray(x))


def test_plan_from_a_torch_layout():
    torch = pytest.importorskip("torch")
    plan = FFT(shape=(4, 8), dtype=torch.complex64, package="torch")
    x = torch.randn(4, 8, dtype=torch.complex64)
    result = plan.execute(x)
    assert isinstance(result, torch.Tensor)
    np.testing.assert_allclose(result.numpy(), np.fft.fftn(x.numpy()), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs, message", [
    ({"shape": (4,)}, "its shape and dtype"),
    ({"shape": (4, 4), "dtype": "c8", "strides": (2, 1)}, "do not lay out shape"),
    ({"shape": (4,), "dtype": "object"}, "unsupported dtype 'object'"),
    ({"shape": (4,), "dtype": "complex64", "package": "jax"}, 'package must be "numpy"'),
    ({"shape": (4,), "dtype": "complex64", "device": 0, "package": "numpy"}, "leave device out"),
])
def test_bad_layouts(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        FFT(**kwargs)
    with pytest.raises(InvalidArgumentError, match="either an operand or shape"):
        FFT(np.zeros(4), shape=(4,))


def test_conjugate_is_for_real_plans():
    x = np.ones((4, 8), np.complex128)
    with pytest.raises(InvalidArgumentError, match="conjugate applies to r2c and c2r plans"):
        FFT(x, kind="c2c", conjugate=True)


@pytest.mark.parametrize("kwargs, message", [
    # (conjugate=2 once conjugated on one side of the plan and not on the other, and a float
    # last_axis_size gave a float output shape: found by the fuzz)
    ({"conjugate": 2}, "conjugate must be True or False, got 2"),
    ({"kind": "c2r", "last_axis_size": 1.5}, "last_axis_size must be an integer, got 1.5")])
def test_plan_options_are_checked(kwargs, message):
    with pytest.raises(InvalidArgumentError, match=f"^{message}$"):
        FFT(np.ones(4, np.complex128 if "kind" in kwargs else np.float64), **kwargs)
    with FFT(np.ones(3), conjugate=np.True_) as plan:  # (NumPy's bools are bools)
        np.testing.assert_allclose(plan.execute(), np.conj(np.fft.rfft(np.ones(3))))



def test_overwrite_input_is_for_c2r_plans():
    with pytest.raises(InvalidArgumentError, match="^overwrite_input applies to c2r plans only$"):
        FFT(np.ones(4), overwrite_input=True)
    with pytest.raises(InvalidArgumentError, match="^overwrite_input must be True or False"):
        FFT(np.ones(4, np.complex128), kind="c2r", overwrite_input="yes")
    half = np.fft.rfft(np.arange(6.0))
    kept = half.copy()
    with FFT(half, kind="c2r", last_axis_size=6, overwrite_input=True) as plan:
        np.testing.assert_allclose(plan.execute(), np.arange(6.0), atol=1e-12)
    np.testing.assert_array_equal(half, kept)  # (a host plan never overwrites)

def test_a_host_plan_of_torch_tensors_checks_the_dtype_of_out():
    torch = pytest.importorskip("torch")
    with FFT(torch.ones(4, 8, dtype=torch.complex128)) as plan:
        with pytest.raises(TypeError, match="Cannot cast the complex128 result into out"):
            plan.execute(out=np.zeros((8, 4)).T)
        out = np.empty((4, 8), np.complex128)
        assert plan.execute(out=out) is out
        np.testing.assert_allclose(out, np.fft.fft2(np.ones((4, 8))), atol=1e-12)


@pytest.mark.parametrize("x", [np.zeros(4, object), np.array(["a", "b", "c", "d"]),
                               [[1.0, 2.0], [3.0]]])
def test_an_operand_the_plan_cannot_read_is_named(x):
    # (the operand's own error once had no name: found by the fuzz)
    with FFT(np.zeros(4)) as plan:
        with pytest.raises((UnsupportedDTypeError, UnsupportedOperandError),
                           match=r"^operand: "):
            plan.execute(x)


# -- one execute per direction --------------------------------------------------------------

def test_direction_runs_are_the_execute_of_each_direction():
    rng = np.random.default_rng()
    x = (rng.standard_normal(16) + 1j * rng.standard_normal(16)).astype(np.complex64)
    plan = FFT(x)
    forward, inverse = plan.direction_runs
    assert_close(forward(x), np.fft.fft(x.astype(np.complex128)), 1e-5)
    assert_close(inverse(x), np.fft.ifft(x.astype(np.complex128)), 1e-5)
    out = np.empty_like(x)
    assert inverse(x, out=out) is out
    real = FFT(x.real.copy(), kind="r2c")
    with pytest.raises(InvalidArgumentError, match="does not fit a r2c plan"):
        real.direction_runs[1](x.real.copy())
    plan.free()
    with pytest.raises(StateError, match="was freed"):
        forward(x)


@pytest.mark.gpu
@pytest.mark.parametrize("package", ["cupy", "torch"])
def test_direction_runs_on_the_gpu_run_in_c_and_are_right(package, request):
    from accelmath._core import hostcall

    rng = np.random.default_rng()
    host = (rng.standard_normal((4, 32)) + 1j * rng.standard_normal((4, 32))).astype(np.complex64)
    if package == "cupy":
        cp = request.getfixturevalue("cp")
        x, get = cp.asarray(host), cp.asnumpy
    else:
        torch = request.getfixturevalue("torch_cuda")
        x, get = torch.from_numpy(host).cuda(), lambda t: t.cpu().numpy()
    plan = FFT(x, axes=(1,))
    if hostcall.status().startswith("C call shim"):  # (each direction that is one C call)
        for direction, run in zip(("forward", "inverse"), plan.direction_runs):
            one_call = plan._calls[direction].direct is not None
            assert (type(run).__name__ == "Launch") == one_call
        assert type(plan.direction_runs[0]).__name__ == "Launch"
    reference = host.astype(np.complex128)
    assert_close(get(plan.direction_runs[0](x)), np.fft.fft(reference), 1e-5)
    assert_close(get(plan.direction_runs[1](x)), np.fft.ifft(reference), 1e-5)
    # the stateless functions run a remembered call through them
    for _ in range(3):
        assert_close(get(accelmath.fft.ifft(x)), np.fft.ifft(reference), 1e-5)
        assert_close(get(accelmath.fft.fft(x)), np.fft.fft(reference), 1e-5)
    plan.free()
    with pytest.raises(StateError, match="was freed"):
        plan.direction_runs[1](x)


def test_a_host_plan_has_no_front_run():
    plan = FFT(np.ones(8, complex))
    assert plan.front_run(False) is None and plan.front_run(True) is None


@pytest.mark.gpu
def test_front_runs_are_made_on_first_use_and_kept(cp):
    from accelmath._core import hostcall
    from accelmath._core.dispatch import MISS

    rng = np.random.default_rng()
    host = (rng.standard_normal((4, 32)) + 1j * rng.standard_normal((4, 32))).astype(np.complex64)
    x = cp.asarray(host)
    plan = FFT(x, axes=(1,))
    assert plan._fronts == {}  # (none made with the plan)
    shim = hostcall.status().startswith("C call shim")
    for direction in ("forward", "inverse"):  # (a front where the direction is one C call)
        run = plan.front_run(direction == "inverse")
        assert (run is not None) == (shim and plan._calls[direction].direct is not None)
    run = plan.front_run(False)
    if run is None:
        return
    assert plan.front_run(False) is run and set(plan._fronts) == {"forward", "inverse"}
    assert run(x) is MISS  # (nothing set up on this thread yet: the plan's own execute's)
    plan.forward(x)
    assert_close(cp.asnumpy(run(x)), np.fft.fft(host.astype(np.complex128)), 1e-5)
    assert run(x[:, :16]) is MISS  # (another layout: the memo's)
    plan.free()
    assert run(x) is MISS
    fresh = FFT(x, axes=(1,))
    fresh.free()
    assert fresh.front_run(False) is None


def test_a_plan_of_a_shape_no_memory_holds_is_refused_saying_so():
    from accelmath.errors import OutOfMemoryError

    with pytest.raises(OutOfMemoryError, match=r"template of shape \(4611686018427387904, 2\)"):
        FFT(shape=(2 ** 62, 2), dtype="complex128")


@pytest.mark.parametrize("order", ["given", "operand's"])
def test_host_results_have_the_plans_output_layout(order):
    """On the CPU too, a plan's new results have the layout ``get_output_layout`` says:
    ``out_strides`` where given, else dense in the operand's axis order."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    x = rng.standard_normal((6, 8)) + 1j * rng.standard_normal((6, 8))
    if order == "given":
        template, options = x, {"out_strides": (1, 6)}
    else:
        template, options = np.asfortranarray(x), {}
        x = np.asfortranarray(x)
    plan = FFT(template, axes=(0, 1), **options)
    shape, strides = plan.get_output_layout()
    assert strides == (1, 6)
    result = plan.forward(x)
    assert result.strides == tuple(s * 16 for s in strides)
    np.testing.assert_allclose(result, np.fft.fft2(x), rtol=1e-12, atol=1e-12)
    tensor_plan = FFT(torch.from_numpy(np.ascontiguousarray(x)), axes=(0, 1), out_strides=(1, 6))
    result = tensor_plan.forward(torch.from_numpy(np.ascontiguousarray(x)))
    assert result.stride() == (1, 6)
    np.testing.assert_allclose(result.numpy(), np.fft.fft2(x), rtol=1e-12, atol=1e-12)
