"""Compile (NVRTC), link (nvJitLink) and load: options, code made without a GPU, the
compiler's and linker's logs in errors, results kept in the store, and, on a GPU, kernels
that run (launch configurations themselves are ``test_launch.py``'s)."""

import ctypes
import dataclasses
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from accelmath._core.disk import store, upkeep
from accelmath._core.gpu import modules
from accelmath._core.gpu.launch import LaunchConfig, launch
from accelmath._core.gpu.modules import CompileOptions, compile_cuda, link, loaded
from accelmath.bindings import _loader
from accelmath.errors import CompileError, CudaLibraryError, InvalidArgumentError

REPO = Path(__file__).resolve().parents[3]
KERNEL = 'extern "C" __global__ void fill(float *x, float v) { x[threadIdx.x] = v; }'
TWICE = '__device__ float twice(float x) { return 2 * x; }'
USES_TWICE = ('__device__ float twice(float x);\n'
              'extern "C" __global__ void double_it(float *x) { x[0] = twice(x[0]); }')


@pytest.fixture
def counted(monkeypatch):
    """How many times NVRTC and nvJitLink really ran."""
    calls = {"nvrtc": 0, "nvjitlink": 0}
    compile_, link_ = modules._nvrtc_compile, modules._nvjitlink_link

    def compile_counted(*args):
        calls["nvrtc"] += 1
        return compile_(*args)

    def link_counted(*args):
        calls["nvjitlink"] += 1
        return link_(*args)

    monkeypatch.setattr(modules, "_nvrtc_compile", compile_counted)
    monkeypatch.setattr(modules, "_nvjitlink_link", link_counted)
    return calls


def _elf_sm(cubin):
    """The SM a cubin is for, read from its ELF header where it uses CUDA 12's ELF ABI
    (version 7: the SM in e_flags' low byte); None for another ABI."""
    assert cubin[:4] == b"\x7fELF"
    return cubin[0x30] if (cubin[7], cubin[8]) == (0x33, 7) else None


# -- options ----------------------------------------------------------------------------------

def test_compile_options():
    options = CompileOptions(arch=[9, 0], extra=["-DN=8", "-lineinfo"])
    assert options == CompileOptions(arch=(9, 0), std="c++17", lto=False,
                                     extra=("-DN=8", "-lineinfo"))
    assert options.arch == (9, 0) and options.extra == ("-DN=8", "-lineinfo")
    assert options.arguments == ("--gpu-architecture=sm_90", "--std=c++17", "-DN=8",
                                 "-lineinfo")
    assert CompileOptions(arch=(8, 6), std="c++20", lto=True).arguments == (
        "--gpu-architecture=sm_86", "--std=c++20", "-dlto", "--relocatable-device-code=true")
    assert hash(options) == hash(CompileOptions(arch=(9, 0), extra=("-DN=8", "-lineinfo")))
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.arch = (8, 0)


def test_device_options_take_the_device_architecture(monkeypatch):
    from accelmath._core.gpu import device

    monkeypatch.setattr(device, "compute_capability", {3: (8, 6)}.__getitem__)
    assert modules.device_options(3, ("-DN=2",)) == CompileOptions(arch=(8, 6),
                                                                    extra=("-DN=2",))
    assert modules.device_options(3).arguments == ("--gpu-architecture=sm_86", "--std=c++17")


@pytest.mark.parametrize("kwargs, message", [
    ({"arch": 90}, "arch=90 is not a compute capability"),
    ({"arch": (9,)}, "arch=(9,) is not a compute capability"),
    ({"arch": "sm_90"}, "arch='sm_90' is not a compute capability"),
    ({"arch": (9, 0.5)}, "is not a compute capability"),
    ({"arch": (9, 10)}, "is not a compute capability"),
    ({"arch": (0, 0)}, "is not a compute capability"),
    ({"arch": (9, 0), "std": "c++03"}, "std='c++03' is not a C++ standard NVRTC takes: "
                                       "expected one of 'c++11', 'c++14', 'c++17', 'c++20'"),
    ({"arch": (9, 0), "lto": 1}, "lto must be True or False, got 1"),
    ({"arch": (9, 0), "extra": "-DN=8"}, "extra='-DN=8' is not a sequence of option strings"),
    ({"arch": (9, 0), "extra": (b"-DN=8",)}, "is not a sequence of option strings"),
])
def test_compile_options_refused(kwargs, message):
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        CompileOptions(**kwargs)


def test_compile_needs_compile_options():
    with pytest.raises(InvalidArgumentError, match=r"options=\(9, 0\) is not a CompileOptions"):
        compile_cuda(KERNEL, (9, 0))


# -- compile and link, no GPU needed ----------------------------------------------------------

@pytest.mark.parametrize("arch", [(8, 0), (9, 0)])
def test_compile_to_a_cubin(store_root, arch, nvrtc):
    cubin = compile_cuda(KERNEL, CompileOptions(arch=arch), "fill.cu")
    assert _elf_sm(cubin) in (None, arch[0] * 10 + arch[1])
    assert b"fill" in cubin


def test_compile_to_ltoir(store_root, nvrtc):
    ltoir = compile_cuda(KERNEL, CompileOptions(arch=(9, 0), lto=True))
    assert ltoir and ltoir[:4] != b"\x7fELF"  # LTO-IR, not machine code
    assert ltoir != compile_cuda(KERNEL, CompileOptions(arch=(9, 0)))


def test_a_compile_error_carries_the_log(store_root, nvrtc):
    with pytest.raises(CompileError) as info:
        compile_cuda('__global__ void k() { undefined_thing; }',
                     CompileOptions(arch=(9, 0), extra=("-DX=1",)), "broken.cu")
    error = info.value
    assert 'identifier "undefined_thing" is undefined' in error.log
    assert "broken.cu" in error.log
    assert str(error).startswith("NVRTC could not compile broken.cu (NVRTC_ERROR_COMPILATION) "
                                 "with --gpu-architecture=sm_90 --std=c++17 -DX=1\n")
    assert error.log in str(error)


def test_an_unknown_option_is_a_compile_error(store_root, nvrtc):
    with pytest.raises(CompileError, match="NVRTC_ERROR_INVALID_OPTION"):
        compile_cuda(KERNEL, CompileOptions(arch=(9, 0), extra=("--no-such-option",)))


@pytest.mark.parametrize("arch", [(8, 0), (9, 0)])
def test_link_ltoir_to_a_cubin(store_root, arch, nvrtc, nvjitlink):
    options = CompileOptions(arch=arch, lto=True)
    images = [compile_cuda(TWICE, options), compile_cuda(USES_TWICE, options)]
    cubin = link(images, arch)
    assert _elf_sm(cubin) in (None, arch[0] * 10 + arch[1])
    assert b"double_it" in cubin


def test_a_link_error_carries_the_log(store_root, nvrtc, nvjitlink):
    alone = compile_cuda(USES_TWICE, CompileOptions(arch=(9, 0), lto=True))
    with pytest.raises(CompileError) as info:
        link([alone], (9, 0))  # twice() is defined nowhere
    assert "Unresolved extern function" in info.value.log
    assert str(info.value).startswith("nvJitLink could not link 1 LTO-IR image (")
    with pytest.raises(CompileError) as info:
        link([b"not LTO-IR"], (9, 0))
    # CUDA 12 says NVJITLINK_ERROR_INVALID_INPUT, CUDA 13 NVJITLINK_ERROR_INCORRECT_INPUT_TYPE
    assert "NVJITLINK_ERROR_IN" in str(info.value) and "bad input" in info.value.log


def test_link_options_go_to_nvjitlink(store_root, nvjitlink):
    with pytest.raises(CudaLibraryError) as info:
        link([b"unused"], (9, 0), extra=("-no-such-option",))
    assert info.value.status_name == "NVJITLINK_ERROR_UNRECOGNIZED_OPTION"
    assert info.value.function.lstrip("_").startswith("nvJitLinkCreate")


@pytest.mark.parametrize("images", [b"bytes, not a list of them", [], ["text"], None])
def test_link_refuses_what_is_not_images(images):
    with pytest.raises(InvalidArgumentError, match="images must be a non-empty sequence"):
        link(images, (9, 0))


def test_link_refuses_a_bad_arch():
    with pytest.raises(InvalidArgumentError, match="arch='sm_90' is not a compute capability"):
        link([b"x"], "sm_90")


# -- the store --------------------------------------------------------------------------------

def test_the_second_compile_comes_from_the_store(store_root, counted, nvrtc):
    options = CompileOptions(arch=(9, 0))
    first = compile_cuda(KERNEL, options, "fill.cu")
    assert compile_cuda(KERNEL, options, "fill.cu") == first
    assert counted["nvrtc"] == 1
    assert upkeep.size().entries == 1
    # each thing that shapes the bytes is in the key
    compile_cuda(KERNEL, CompileOptions(arch=(8, 0)), "fill.cu")
    compile_cuda(KERNEL, CompileOptions(arch=(9, 0), extra=("-DN=1",)), "fill.cu")
    compile_cuda(KERNEL, CompileOptions(arch=(9, 0), lto=True), "fill.cu")
    compile_cuda(KERNEL + "\n", options, "fill.cu")
    compile_cuda(KERNEL, options, "other.cu")
    assert counted["nvrtc"] == 6


def test_another_nvrtc_file_compiles_again(store_root, counted, monkeypatch, tmp_path, nvrtc):
    # the key names NVRTC's file, its size and time: a new NVRTC (another file, or the same
    # file replaced) makes new keys
    compile_cuda(KERNEL, CompileOptions(arch=(9, 0)))
    copy = tmp_path / "libnvrtc-other.so"  # (only named in the key: NVRTC itself compiles)
    copy.write_bytes(b"another NVRTC")
    monkeypatch.setattr(_loader, "library_file", lambda name: str(copy))
    compile_cuda(KERNEL, CompileOptions(arch=(9, 0)))
    assert counted["nvrtc"] == 2
    os.utime(copy, ns=(0, 12345))
    compile_cuda(KERNEL, CompileOptions(arch=(9, 0)))
    assert counted["nvrtc"] == 3


def test_a_remembered_nvrtc_is_not_loaded_to_name_it(store_root, monkeypatch, nvrtc):
    # with the store's memo of library paths, the key needs no NVRTC loaded
    path = nvrtc.lib.path
    monkeypatch.setattr(_loader, "_loaded", {})
    monkeypatch.setattr(_loader, "_memo", (lambda name: path, None))
    assert modules._compiler().startswith("nvrtc " + path)
    assert "nvrtc" not in _loader._loaded


def test_without_the_store_each_compile_runs_nvrtc(store_root, counted, monkeypatch, nvrtc):
    monkeypatch.setenv("ACCELMATH_CACHE", "0")
    compile_cuda(KERNEL, CompileOptions(arch=(9, 0)))
    compile_cuda(KERNEL, CompileOptions(arch=(9, 0)))
    assert counted["nvrtc"] == 2
    assert not store_root.exists()


def test_a_damaged_cubin_in_the_store_is_compiled_again(store_root, counted, nvrtc):
    good = compile_cuda(KERNEL, CompileOptions(arch=(9, 0)))
    (entry,) = store_root.rglob("*.entry")
    entry.write_bytes(entry.read_bytes()[:-100])
    assert compile_cuda(KERNEL, CompileOptions(arch=(9, 0))) == good
    assert counted["nvrtc"] == 2
    assert compile_cuda(KERNEL, CompileOptions(arch=(9, 0))) == good
    assert counted["nvrtc"] == 2  # rewritten whole


def test_the_second_link_comes_from_the_store(store_root, counted, nvrtc, nvjitlink):
    options = CompileOptions(arch=(9, 0), lto=True)
    images = [compile_cuda(TWICE, options), compile_cuda(USES_TWICE, options)]
    first = link(images, (9, 0))
    assert link(images, (9, 0)) == first
    assert counted["nvjitlink"] == 1
    link(images, (9, 0), extra=("-O0",))
    link(images[::-1], (9, 0))
    link(images, (9, 0), extra=("-maxrregcount=64",))
    assert counted["nvjitlink"] == 4


def test_a_new_process_finds_the_code_compiled(store_root, nvrtc):
    compile_cuda(KERNEL, CompileOptions(arch=(9, 0)), "fill.cu")
    code = ("from accelmath._core.gpu import modules\n"
            "def refuse(*args):\n"
            "    raise AssertionError('NVRTC ran again')\n"
            "modules._nvrtc_compile = refuse\n"
            f"cubin = modules.compile_cuda({KERNEL!r}, modules.CompileOptions(arch=(9, 0)),"
            " 'fill.cu')\n"
            "print(cubin[:4])\n")
    environment = {**os.environ, "ACCELMATH_CACHE_DIR": str(store_root),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                               os.environ.get("PYTHONPATH")]))}
    environment.pop("ACCELMATH_CACHE", None)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, env=environment, stdin=subprocess.DEVNULL, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr(b"\x7fELF")


# -- on a GPU ---------------------------------------------------------------------------------

def _cupy_device():
    """CuPy, the current device's ordinal and its compute capability."""
    from accelmath._core.gpu.device import compute_capability

    cp = pytest.importorskip("cupy")
    device_id = cp.cuda.Device().id
    return cp, device_id, compute_capability(device_id)


@pytest.mark.gpu
def test_load_and_launch(store_root):
    cp, device_id, arch = _cupy_device()
    module = loaded(device_id, KERNEL, "fill.cu")
    assert loaded(device_id, KERNEL, "fill.cu") is module
    cubin = compile_cuda(KERNEL, CompileOptions(arch=arch), "fill.cu")
    assert modules.load(device_id, cubin) is module  # one load per device and image
    x = cp.zeros(64, cp.float32)
    stream = cp.cuda.get_current_stream()
    launch(module.function("fill"), LaunchConfig(1, 64),
           (ctypes.c_void_p(x.data.ptr), ctypes.c_float(3.5)), stream.ptr)
    stream.synchronize()
    assert (x.get() == 3.5).all()
    with pytest.raises(CudaLibraryError, match="CUDA_ERROR_NOT_FOUND"):
        module.function("no_such_kernel")


@pytest.mark.gpu
def test_linked_code_runs(store_root):
    cp, device_id, arch = _cupy_device()
    options = CompileOptions(arch=arch, lto=True)
    cubin = link([compile_cuda(TWICE, options), compile_cuda(USES_TWICE, options)], arch)
    x = cp.full(1, 1.25, cp.float32)
    function = modules.load(device_id, cubin).function("double_it")
    launch(function, LaunchConfig(1, 1), (ctypes.c_void_p(x.data.ptr),), None)
    cp.cuda.Device().synchronize()
    assert float(x.get()[0]) == 2.5


CLUSTER_KERNEL = r"""
extern "C" __global__ void where(int *out) {
    unsigned rank, size;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
    int block = blockIdx.x + gridDim.x * blockIdx.y;
    if (threadIdx.x == 0) { out[2 * block] = rank; out[2 * block + 1] = size; }
}
"""


@pytest.mark.gpu
def test_launch_with_clusters(store_root):
    cp, device_id, arch = _cupy_device()
    if arch < (9, 0):
        pytest.skip("thread-block clusters need compute capability 9.0")
    module = loaded(device_id, CLUSTER_KERNEL, "where.cu")
    out = cp.full(2 * 16 * 2, -1, cp.int32)
    launch(module.function("where"), LaunchConfig(grid=(16, 2), block=32, cluster=(4, 1)),
           (ctypes.c_void_p(out.data.ptr),), None)
    cp.cuda.Device().synchronize()
    ranks, sizes = out.get().reshape(-1, 2).T
    assert (sizes == 4).all()
    assert (ranks.reshape(2, 16) == [[0, 1, 2, 3] * 4] * 2).all()
    # without a cluster each block is a cluster of one
    launch(module.function("where"), LaunchConfig(grid=(16, 2), block=32),
           (ctypes.c_void_p(out.data.ptr),), None)
    cp.cuda.Device().synchronize()
    assert (out.get().reshape(-1, 2) == [0, 1]).all()


# -- compiling in the background ---------------------------------------------------------------

@pytest.fixture
def background(monkeypatch):
    """Fresh records of background compiles."""
    monkeypatch.setattr(modules, "_soon", {})
    monkeypatch.setattr(modules, "_done", {})


def test_a_background_compile_is_not_done_again(monkeypatch, background, counted, nvrtc):
    monkeypatch.setenv("ACCELMATH_CACHE", "0")  # (no store: the process keeps the result)
    options = CompileOptions(arch=(9, 0))
    assert not modules.is_compiled(KERNEL, options, "soon.cu")
    thread = modules.compile_soon(KERNEL, options, "soon.cu")
    assert not thread.daemon and modules.compile_soon(KERNEL, options, "soon.cu") is thread
    cubin = compile_cuda(KERNEL, options, "soon.cu")  # waits for the thread
    assert cubin[:4] == b"\x7fELF" and counted["nvrtc"] == 1
    assert modules.is_compiled(KERNEL, options, "soon.cu")
    assert not modules.is_compiled(KERNEL, options, "other.cu")


def test_a_deferred_compile_waits_for_the_others(monkeypatch, background):
    """A deferred compile runs NVRTC only once the compiles running when it starts have
    ended; one started meanwhile does not wait for it."""
    monkeypatch.setenv("ACCELMATH_CACHE", "0")
    gate, order = threading.Event(), []

    def fake_nvrtc(source, name, options):
        if name == "first.cu":
            gate.wait(30)
        order.append(name)
        return b"image"

    monkeypatch.setattr(modules, "_nvrtc_compile", fake_nvrtc)
    options = CompileOptions(arch=(9, 0))
    first = modules.compile_soon(KERNEL, options, "first.cu")
    deferred = modules.compile_soon(KERNEL, options, "later.cu", deferred=True)
    deferred.join(0.2)
    assert deferred.is_alive() and order == []
    modules.compile_soon(KERNEL, options, "meanwhile.cu").join(10)
    assert order == ["meanwhile.cu"]
    gate.set()
    for thread in (first, deferred):
        thread.join(10)
    assert order == ["meanwhile.cu", "first.cu", "later.cu"]
    assert modules._busy == [0] and modules.is_compiled(KERNEL, options, "later.cu")


def test_wait_for_compiles_joins_the_background_ones(monkeypatch, background, counted, nvrtc):
    monkeypatch.setenv("ACCELMATH_CACHE", "0")
    thread = modules.compile_soon(KERNEL + "// waited", CompileOptions(arch=(9, 0)), "w.cu")
    modules.wait_for_compiles()
    assert not thread.is_alive() and counted["nvrtc"] == 1


def test_a_background_compile_fills_the_store(store_root, background, counted, nvrtc):
    options = CompileOptions(arch=(9, 0))
    modules.compile_soon(KERNEL, options, "soon.cu").join()
    modules._done.clear()  # (another process: only the store knows)
    assert modules.is_compiled(KERNEL, options, "soon.cu")
    compile_cuda(KERNEL, options, "soon.cu")
    assert counted["nvrtc"] == 1


def test_a_failed_background_compile_is_logged_and_met_again(background, caplog, nvrtc):
    bad = 'extern "C" __global__ void k() { undefined_thing; }'
    with caplog.at_level("INFO", logger="accelmath.modules"):
        modules.compile_soon(bad, CompileOptions(arch=(9, 0)), "bad.cu").join()
    assert "compiling bad.cu in the background failed" in caplog.text
    with pytest.raises(CompileError, match="undefined_thing"):
        compile_cuda(bad, CompileOptions(arch=(9, 0)), "bad.cu")


def test_a_process_that_ends_waits_for_its_background_compile(store_root, counted, nvrtc):
    # (NVRTC unloaded under a running compile crashes the process at exit)
    code = ("from accelmath._core.gpu.modules import CompileOptions, compile_soon; "
            f"compile_soon({KERNEL!r} + '// exit', CompileOptions(arch=(9, 0)), 'exit.cu')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert done.returncode == 0 and not done.stderr, done.stderr
    compile_cuda(KERNEL + "// exit", CompileOptions(arch=(9, 0)), "exit.cu")
    assert counted["nvrtc"] == 0  # the compile finished and was kept


def test_a_long_compile_does_not_hold_up_another_source(monkeypatch):
    # loaded() of one source waits in its compile; loaded() of another runs meanwhile
    import threading

    started, release = threading.Event(), threading.Event()

    def compile_(source, options, name):
        if "slow" in source:
            started.set()
            assert release.wait(30)
        return source.encode()

    monkeypatch.setattr(modules, "compile_cuda", compile_)
    monkeypatch.setattr(modules, "device_options", lambda device_id, extra=(): None)
    monkeypatch.setattr(modules, "load", lambda device_id, image: image)
    monkeypatch.setattr(modules, "_sources", {})
    monkeypatch.setattr(modules, "_source_locks", {})
    slow = threading.Thread(target=loaded, args=(0, "// slow"))
    quick = threading.Thread(target=loaded, args=(0, "// quick"))
    slow.start()
    try:
        assert started.wait(10)
        quick.start()
        quick.join(5)
        assert not quick.is_alive()  # (done while the slow one still compiles)
        assert slow.is_alive()
    finally:
        release.set()
        slow.join()
        quick.join()
    assert loaded(0, "// quick") == b"// quick"
    assert loaded(0, "// slow") == b"// slow"


def test_a_source_compiling_in_the_background_is_not_looked_up_in_the_store(monkeypatch, nvrtc):
    # (a caller polls is_compiled while its compile runs: no store read per poll)
    import threading

    release = threading.Event()
    options = CompileOptions(arch=(9, 0))
    key = modules._compile_key("// polled", options, "polled.cu")
    compiling = threading.Thread(target=release.wait, args=(30,))
    compiling.start()
    reads = []
    monkeypatch.setattr(store, "load", lambda *args: reads.append(args))
    monkeypatch.setitem(modules._soon, key, compiling)
    try:
        assert not modules.is_compiled("// polled", options, "polled.cu")
        assert not reads
    finally:
        release.set()
        compiling.join()
    modules.is_compiled("// polled", options, "polled.cu")  # (done: the store is asked)
    assert reads
