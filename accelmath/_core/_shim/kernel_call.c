/* kernel_call, part of accelmath._core._hostcall: a kernel launch as a C function of word
 * arguments, which a Function (and so a Launch, hostcall.c) calls like any library call:
 *
 *   int kernel_call(W driver, W function, W grid, W block, W stream, W p0, ..., W p10)
 *
 * launches CUfunction `function` with the grid x | y << 32 | z << 48 (x below 2**32, y and z
 * below 2**16), the block x | y << 11 | z << 22 (each below 2**11) with block >> 32 bytes of
 * dynamic shared memory, on `stream`, its parameters the 11 words p0 to p10 (a kernel whose
 * parameters are 8-byte values: pointers, 64-bit integers, doubles; it reads as many as it
 * declares). `driver` is the address of a KernelDriver: the driver's functions and the
 * kernel's context, which is pushed for the launch where the calling thread's current context
 * is another, and popped after, so that the caller's stays current. The words live on this
 * call's stack: threads launch at once without sharing them (the driver copies the
 * parameters before cuLaunchKernel returns). The status is the driver's, of the first call
 * that failed. */
#include "shim.h"

#define KERNEL_WORDS 11

/* What the caller keeps alive as long as it calls kernel_call with its address: cuLaunchKernel,
 * cuCtxGetCurrent, cuCtxPushCurrent and cuCtxPopCurrent, and the kernel's CUcontext. */
typedef struct {
    launch_fn launch;
    context_fn context_get;
    int (*context_push)(void *);
    int (*context_pop)(void **);
    void *context;
} KernelDriver;

int kernel_call(W driver_, W function, W grid, W block, W stream, W p0, W p1, W p2, W p3, W p4,
                W p5, W p6, W p7, W p8, W p9, W p10) {
    const KernelDriver *driver = (const KernelDriver *)driver_;
    W words[KERNEL_WORDS] = {p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10};
    void *parameters[KERNEL_WORDS];
    for (int i = 0; i < KERNEL_WORDS; i++) {
        parameters[i] = &words[i];
    }
    uint64_t g = (uint64_t)grid, b = (uint64_t)block;
    void *current = NULL;
    int status = driver->context_get(&current);
    int pushed = 0;
    if (status == 0 && current != driver->context) {
        status = driver->context_push(driver->context);
        pushed = status == 0;
    }
    if (status == 0) {
        status = driver->launch(function, (unsigned)(g & 0xffffffffu),
                                (unsigned)((g >> 32) & 0xffff), (unsigned)(g >> 48),
                                (unsigned)(b & 0x7ff), (unsigned)((b >> 11) & 0x7ff),
                                (unsigned)((b >> 22) & 0x7ff), (unsigned)(b >> 32), stream,
                                parameters, NULL);
    }
    if (pushed) {
        void *popped;
        int popped_status = driver->context_pop(&popped);
        if (status == 0) {
            status = popped_status;
        }
    }
    return status;
}
