"""ctypes bindings for the CUDA driver API (``libcuda.so.1``, shipped with the display driver).

Only what accelmath needs: device and context queries, module loading and kernel launch for
the kernels it compiles, stream-ordered copies, and events to time candidate plans.
"""

from ctypes import (POINTER, Structure, Union, c_char, c_char_p, c_float, c_int, c_size_t,
                    c_uint, c_ulonglong, c_void_p)

from accelmath.bindings._loader import Function, Library

__all__ = ["lib", "FUNCTIONS", "STATUS_NAMES", "ATTRIBUTE", "LAUNCH_ATTRIBUTE",
           "POINTER_ATTRIBUTE", "CUlaunchAttribute", "CUlaunchConfig", "status_name"]

# CUdevice_attribute values used by accelmath
ATTRIBUTE = {"multiprocessor_count": 16, "compute_capability_major": 75,
             "compute_capability_minor": 76, "pci_bus_id": 33,
             "max_shared_memory_per_block_optin": 97}

# CUpointer_attribute values used by accelmath
POINTER_ATTRIBUTE = {"memory_type": 2, "device_ordinal": 9}

# CUlaunchAttributeID values used by accelmath
LAUNCH_ATTRIBUTE = {"cluster_dimension": 4}


class _Dim3(Structure):
    _fields_ = [("x", c_uint), ("y", c_uint), ("z", c_uint)]


class _LaunchAttributeValue(Union):
    # A 64-byte union in cuda.h; of its members accelmath sets only clusterDim. The pointer
    # member gives it the 8-byte alignment its largest C members (pointers, size_t) give it.
    _fields_ = [("pad", c_char * 64), ("cluster_dim", _Dim3), ("align", c_void_p)]


class CUlaunchAttribute(Structure):
    """``CUlaunchAttribute``: an attribute ID (4 bytes, padded to 8) and its 64-byte value."""

    _fields_ = [("id", c_int), ("pad", c_char * 4), ("value", _LaunchAttributeValue)]


class CUlaunchConfig(Structure):
    """``CUlaunchConfig``: what ``cuLaunchKernelEx`` launches with."""

    _fields_ = [("grid_dim_x", c_uint), ("grid_dim_y", c_uint), ("grid_dim_z", c_uint),
                ("block_dim_x", c_uint), ("block_dim_y", c_uint), ("block_dim_z", c_uint),
                ("shared_mem_bytes", c_uint), ("stream", c_void_p),
                ("attrs", POINTER(CUlaunchAttribute)), ("num_attrs", c_uint)]

STATUS_NAMES = {
    0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED", 4: "CUDA_ERROR_DEINITIALIZED", 100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE", 200: "CUDA_ERROR_INVALID_IMAGE",
    201: "CUDA_ERROR_INVALID_CONTEXT", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
    218: "CUDA_ERROR_INVALID_PTX", 222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    400: "CUDA_ERROR_INVALID_HANDLE", 500: "CUDA_ERROR_NOT_FOUND", 600: "CUDA_ERROR_NOT_READY",
    700: "CUDA_ERROR_ILLEGAL_ADDRESS", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    719: "CUDA_ERROR_LAUNCH_FAILED", 999: "CUDA_ERROR_UNKNOWN",
}

_p = c_void_p

FUNCTIONS = (
    # CUresult cuInit(unsigned int Flags);
    Function("init", ("cuInit",), (c_uint,)),
    # CUresult cuDriverGetVersion(int *driverVersion);
    Function("driver_get_version", ("cuDriverGetVersion",), (POINTER(c_int),)),
    # CUresult cuDeviceGetCount(int *count);
    Function("device_get_count", ("cuDeviceGetCount",), (POINTER(c_int),)),
    # CUresult cuDeviceGet(CUdevice *device, int ordinal);
    Function("device_get", ("cuDeviceGet",), (POINTER(c_int), c_int)),
    # CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
    Function("device_get_name", ("cuDeviceGetName",), (c_char_p, c_int, c_int)),
    # CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
    Function("device_get_attribute", ("cuDeviceGetAttribute",), (POINTER(c_int), c_int, c_int)),
    # CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev);
    Function("device_total_mem", ("cuDeviceTotalMem_v2",), (POINTER(c_size_t), c_int)),
    # CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
    Function("device_primary_ctx_retain", ("cuDevicePrimaryCtxRetain",), (POINTER(_p), c_int)),
    # CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
    Function("device_primary_ctx_get_state", ("cuDevicePrimaryCtxGetState",),
             (c_int, POINTER(c_uint), POINTER(c_int))),
    # CUresult cuCtxGetCurrent(CUcontext *pctx);
    Function("ctx_get_current", ("cuCtxGetCurrent",), (POINTER(_p),)),
    # CUresult cuCtxSetCurrent(CUcontext ctx);
    Function("ctx_set_current", ("cuCtxSetCurrent",), (_p,)),
    # CUresult cuCtxPushCurrent(CUcontext ctx);
    Function("ctx_push_current", ("cuCtxPushCurrent_v2",), (_p,)),
    # CUresult cuCtxPopCurrent(CUcontext *pctx);
    Function("ctx_pop_current", ("cuCtxPopCurrent_v2",), (POINTER(_p),)),
    # CUresult cuCtxGetDevice(CUdevice *device);
    Function("ctx_get_device", ("cuCtxGetDevice",), (POINTER(c_int),)),
    # CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
    Function("pointer_get_attribute", ("cuPointerGetAttribute",), (_p, c_int, c_ulonglong)),
    # CUresult cuModuleLoadData(CUmodule *module, const void *image);
    Function("module_load_data", ("cuModuleLoadData",), (POINTER(_p), c_char_p)),
    # CUresult cuModuleUnload(CUmodule hmod);
    Function("module_unload", ("cuModuleUnload",), (_p,)),
    # CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
    Function("module_get_function", ("cuModuleGetFunction",), (POINTER(_p), _p, c_char_p)),
    # CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value);
    Function("func_set_attribute", ("cuFuncSetAttribute",), (_p, c_int, c_int)),
    # CUresult cuLaunchKernel(CUfunction f, unsigned gridDimX, unsigned gridDimY,
    #     unsigned gridDimZ, unsigned blockDimX, unsigned blockDimY, unsigned blockDimZ,
    #     unsigned sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
    Function("launch_kernel", ("cuLaunchKernel",),
             (_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, _p, _p, _p)),
    # CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
    #     void **kernelParams, void **extra);
    Function("launch_kernel_ex", ("cuLaunchKernelEx",), (POINTER(CUlaunchConfig), _p, _p, _p)),
    # CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
    #     CUstream hStream);
    Function("memcpy_async", ("cuMemcpyAsync",), (c_ulonglong, c_ulonglong, c_size_t, _p)),
    # CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t ByteCount,
    #     CUstream hStream);
    Function("memcpy_htod_async", ("cuMemcpyHtoDAsync_v2",), (c_ulonglong, _p, c_size_t, _p)),
    # CUresult cuStreamSynchronize(CUstream hStream);
    Function("stream_synchronize", ("cuStreamSynchronize",), (_p,)),
    # CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags);
    Function("stream_create", ("cuStreamCreate",), (POINTER(_p), c_uint)),
    # CUresult cuStreamDestroy(CUstream hStream);
    Function("stream_destroy", ("cuStreamDestroy_v2",), (_p,)),
    # CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
    Function("mem_host_alloc", ("cuMemHostAlloc",), (POINTER(_p), c_size_t, c_uint)),
    # CUresult cuMemFreeHost(void *p);
    Function("mem_free_host", ("cuMemFreeHost",), (_p,)),
    # CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N);
    Function("memset_d8", ("cuMemsetD8_v2",), (c_ulonglong, c_uint, c_size_t)),
    # CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
    #     CUstream hStream);
    Function("memset_d8_async", ("cuMemsetD8Async",), (c_ulonglong, c_uint, c_size_t, _p)),
    # CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags);
    Function("event_create", ("cuEventCreate",), (POINTER(_p), c_uint)),
    # CUresult cuEventDestroy(CUevent hEvent);
    Function("event_destroy", ("cuEventDestroy_v2",), (_p,)),
    # CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
    Function("event_record", ("cuEventRecord",), (_p, _p)),
    # CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags);
    Function("stream_wait_event", ("cuStreamWaitEvent",), (_p, _p, c_uint)),
    # CUresult cuEventSynchronize(CUevent hEvent);
    Function("event_synchronize", ("cuEventSynchronize",), (_p,)),
    # CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
    Function("event_elapsed_time", ("cuEventElapsedTime_v2", "cuEventElapsedTime"),
             (POINTER(c_float), _p, _p)),
    # CUresult cuGetErrorName(CUresult error, const char **pStr);
    Function("get_error_name", ("cuGetErrorName",), (c_int, POINTER(c_char_p))),
)

lib = Library("cuda", FUNCTIONS, STATUS_NAMES)


def status_name(status):
    """The symbolic name of a ``CUresult`` code, for example ``"CUDA_ERROR_NO_DEVICE"``."""
    return lib.status_name(status)
