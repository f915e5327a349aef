"""Launch configurations checked once against what every GPU allows, and launch() passing
them to the driver as it should, with and without clusters (a fake driver: no GPU needed).
The kernels that run on a GPU are in ``test_modules.py``, beside their loading."""

import ctypes

import numpy as np
import pytest

from accelmath._core.gpu.launch import LaunchConfig, launch
from accelmath.bindings import driver
from accelmath.errors import InvalidArgumentError


# -- launch configurations, checked without a GPU ---------------------------------------------

def test_launch_config_dimensions():
    config = LaunchConfig(grid=(64, 2), block=256, shared_bytes=1024)
    assert (config.grid, config.block, config.shared_bytes, config.cluster) == (
        (64, 2, 1), (256, 1, 1), 1024, None)
    assert config._dims == (64, 2, 1, 256, 1, 1, 1024) and config._attributes is None
    assert LaunchConfig(grid=[2, 3, 4], block=(8, 8, 16)).block == (8, 8, 16)
    assert LaunchConfig(grid=np.int64(5), block=np.int32(32)).grid == (5, 1, 1)
    assert LaunchConfig(grid=(64, 2), block=256) == LaunchConfig((64, 2, 1), (256, 1, 1))


def test_launch_config_cluster():
    config = LaunchConfig(grid=(16, 4), block=128, cluster=8)
    assert config.cluster == (8, 1, 1)
    (attribute,) = config._attributes
    assert attribute.id == driver.LAUNCH_ATTRIBUTE["cluster_dimension"] == 4
    dim = attribute.value.cluster_dim
    assert (dim.x, dim.y, dim.z) == (8, 1, 1)
    assert LaunchConfig(grid=(4, 4, 2), block=32, cluster=(2, 2, 2)).cluster == (2, 2, 2)


@pytest.mark.parametrize("kwargs, message", [
    ({"grid": 0, "block": 32}, "grid=0 is not a launch dimension"),
    ({"grid": -1, "block": 32}, "grid=-1 is not a launch dimension"),
    ({"grid": 2.0, "block": 32}, "grid=2.0 is not a launch dimension"),
    ({"grid": (1, 2, 3, 4), "block": 32}, "is not a launch dimension: expected a positive int "
                                          "or 1 to 3 positive ints"),
    ({"grid": (), "block": 32}, "grid=() is not a launch dimension"),
    ({"grid": "8", "block": 32}, "grid='8' is not a launch dimension"),
    ({"grid": 1, "block": 2048}, "block=2048 exceeds what a launch allows: at most "
                                 "(1024, 1024, 64)"),
    ({"grid": 1, "block": (1, 1, 128)}, "block=(1, 1, 128) exceeds what a launch allows"),
    ({"grid": 1, "block": (64, 32)}, "block=(64, 32) has 2048 threads: a block has at most "
                                     "1024"),
    ({"grid": (1, 70000), "block": 32}, "grid=(1, 70000) exceeds what a launch allows"),
    ({"grid": 2**31, "block": 32}, "exceeds what a launch allows"),
    ({"grid": 1, "block": 32, "shared_bytes": -1}, "shared_bytes=-1 is not a byte count"),
    ({"grid": 1, "block": 32, "shared_bytes": 2**32}, "is not a byte count"),
    ({"grid": 1, "block": 32, "shared_bytes": 1.5}, "shared_bytes=1.5 is not a byte count"),
    ({"grid": 12, "block": 32, "cluster": 8}, "grid=12 is not a whole number of clusters of 8"),
    ({"grid": (8, 3), "block": 32, "cluster": (1, 2)}, "each grid dimension must be a multiple"),
    ({"grid": 8, "block": 32, "cluster": 0}, "cluster=0 is not a launch dimension"),
])
def test_launch_config_refused(kwargs, message):
    with pytest.raises(InvalidArgumentError) as info:
        LaunchConfig(**kwargs)
    assert message in str(info.value)


class _FakeDriver:
    """Records what launch() passes to the driver."""

    def __init__(self):
        self.calls = []

    status = 0
    count = 0  # the kernel parameters to copy (their array lives only through the call)

    def launch_kernel(self, function, *rest):
        parameters = _parameter_addresses(rest[8], self.count)
        self.calls.append(("cuLaunchKernel", function, rest[:8] + (parameters,) + rest[9:]))
        return self.status

    def launch_kernel_ex(self, config, function, parameters, extra):
        native = ctypes.cast(config, ctypes.POINTER(driver.CUlaunchConfig)).contents
        attributes = [native.attrs[i] for i in range(native.num_attrs)]
        self.calls.append(("cuLaunchKernelEx", function, (
            tuple(getattr(native, f) for f in ("grid_dim_x", "grid_dim_y", "grid_dim_z",
                                               "block_dim_x", "block_dim_y", "block_dim_z",
                                               "shared_mem_bytes")),
            native.stream,
            [(a.id, (a.value.cluster_dim.x, a.value.cluster_dim.y, a.value.cluster_dim.z))
             for a in attributes],
            parameters, extra)))


@pytest.fixture
def fake_driver(monkeypatch):
    from accelmath._core.gpu import launch as launch_module

    fake = _FakeDriver()
    # cuLaunchKernel as launch() binds it once; cuLaunchKernelEx set in the instance's dict,
    # where a bound function is kept: no driver is loaded
    monkeypatch.setattr(launch_module, "_launch_kernel", [(fake.launch_kernel, "cuLaunchKernel")])
    monkeypatch.setitem(vars(driver.lib), "launch_kernel_ex", fake.launch_kernel_ex)
    return fake


def _parameter_addresses(parameters, count):
    return [ctypes.cast(parameters, ctypes.POINTER(ctypes.c_void_p))[i] for i in range(count)]


def test_launch_without_a_cluster(fake_driver):
    args = (ctypes.c_void_p(0x1000), ctypes.c_float(2.0))
    fake_driver.count = 2
    launch(ctypes.c_void_p(0xF00), LaunchConfig(grid=(3, 2), block=(32, 4), shared_bytes=512),
           args, 77)
    ((name, function, rest),) = fake_driver.calls
    assert (name, function) == ("cuLaunchKernel", 0xF00)
    assert rest[:8] == (3, 2, 1, 32, 4, 1, 512, 77)
    assert rest[8] == [ctypes.addressof(a) for a in args]
    assert rest[9] is None


def test_a_failed_launch_raises_the_driver_status(fake_driver, monkeypatch):
    from accelmath.errors import CudaLibraryError

    monkeypatch.setitem(vars(driver.lib), "status_names", {719: "CUDA_ERROR_LAUNCH_FAILED"})
    fake_driver.status = 719
    with pytest.raises(CudaLibraryError, match="cuLaunchKernel.*CUDA_ERROR_LAUNCH_FAILED"):
        launch(ctypes.c_void_p(1), LaunchConfig(grid=1, block=32), (), 0)


def test_launch_with_a_cluster(fake_driver):
    args = (ctypes.c_int(5),)
    launch("kernel", LaunchConfig(grid=(16, 2), block=128, shared_bytes=64, cluster=(4, 2)),
           args, 99)
    ((name, function, (dims, stream, attributes, parameters, extra)),) = fake_driver.calls
    assert (name, function) == ("cuLaunchKernelEx", "kernel")
    assert dims == (16, 2, 1, 128, 1, 1, 64) and stream == 99
    assert attributes == [(4, (4, 2, 1))]
    assert _parameter_addresses(parameters, 1) == [ctypes.addressof(args[0])]
    assert extra is None


def test_launch_structures_match_cuda_h():
    # sizes and offsets of CUDA 12's and 13's cuda.h on 64-bit systems
    assert ctypes.sizeof(driver.CUlaunchAttribute) == 72
    assert driver.CUlaunchAttribute.value.offset == 8
    assert ctypes.sizeof(driver.CUlaunchConfig) == 56
    assert driver.CUlaunchConfig.stream.offset == 32
    assert driver.CUlaunchConfig.attrs.offset == 40
    assert driver.CUlaunchConfig.num_attrs.offset == 48
