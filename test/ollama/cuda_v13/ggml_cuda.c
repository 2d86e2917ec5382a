/*
 * libggml-cuda.so stand-in: the CUDA backend, which links libcuda.so.1 by
 * DT_NEEDED (as ggml's does, beside libcudart and libcublas).  Whichever
 * libcuda.so.1 the loader resolves for it, vgpu or the driver, serves every
 * call below.
 */
#define _GNU_SOURCE
#include "../ggml_standin.h"

#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_DEVICES 16

/* Each device's primary context, retained on first use and kept until exit,
 * as the CUDA runtime keeps it.  Owned by this backend; the programs that
 * load it call it from one thread. */
static CUcontext contexts[MAX_DEVICES];

static CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;

static int device_count(int *count)
{
    *count = 0;
    return init_result != CUDA_SUCCESS ? (int)init_result : (int)cuDeviceGetCount(count);
}

/* Makes dev's primary context current, retaining it the first time. */
static CUresult use_device(int dev)
{
    if (dev < 0 || dev >= MAX_DEVICES)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!contexts[dev]) {
        CUdevice d;
        CUresult r = cuDeviceGet(&d, dev);
        if (r == CUDA_SUCCESS)
            r = cuDevicePrimaryCtxRetain(&contexts[dev], d);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return cuCtxSetCurrent(contexts[dev]);
}

static int device_props(int dev, struct ggml_standin_props *p)
{
    CUdevice d;
    CUresult r = cuDeviceGet(&d, dev);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetName(p->name, sizeof(p->name), d);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetPCIBusId(p->pci, sizeof(p->pci), d);
    if (r == CUDA_SUCCESS)
        r = cuDeviceTotalMem_v2(&p->total_mem, d);
    if (r == CUDA_SUCCESS)
        r = use_device(dev);
    if (r == CUDA_SUCCESS)
        r = cuMemGetInfo_v2(&p->free, &p->total);
    return (int)r;
}

static int alloc(int dev, size_t bytes)
{
    CUdeviceptr ptr;
    CUresult r = use_device(dev);
    return (int)(r != CUDA_SUCCESS ? r : cuMemAlloc_v2(&ptr, bytes));
}

static const char *error_name(int result)
{
    const char *name = NULL;
    return cuGetErrorName((CUresult)result, &name) == CUDA_SUCCESS && name ? name : "CUDA_ERROR_UNKNOWN";
}

static const char *driver_path(void)
{
    static char path[PATH_MAX]; /* filled once; the callers are single-threaded */
    Dl_info info;
    if (!path[0] && dladdr((void *)cuInit, &info) && info.dli_fname && !realpath(info.dli_fname, path))
        snprintf(path, sizeof(path), "%s", info.dli_fname);
    return path[0] ? path : "unknown";
}

static const struct ggml_standin_reg reg = {
    .name = "CUDA",
    .device_count = device_count,
    .device_props = device_props,
    .alloc = alloc,
    .error_name = error_name,
    .driver_path = driver_path,
};

GGML_STANDIN_EXPORT const struct ggml_standin_reg *ggml_backend_init(void)
{
    /* ggml's CUDA backend initialises the driver when it is registered. */
    init_result = cuInit(0);
    if (init_result != CUDA_SUCCESS)
        ggml_log_error("cuInit failed: %s", error_name((int)init_result));
    return &reg;
}
