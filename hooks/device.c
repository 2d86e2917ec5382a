/* Device hooks: admission at cuInit, and the device count and sizes CUDA shows. */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_cuda_slots.h"

#include <cuda.h>
#include <limits.h>

VGPU_EXPORT CUresult cuInit(unsigned int Flags)
{
    CUresult r = vgpu_backend_cuda_admit();
    if (r == CUDA_SUCCESS)
        r = VGPU_REAL_CUDA(cuInit)(Flags);
    if (r == CUDA_SUCCESS)
        vgpu_backend_cuda_initialised();
    vgpu_trace("cuInit", r, "%u", Flags);
    return r;
}

VGPU_EXPORT CUresult cuDeviceGetCount(int *count)
{
    CUresult r = count ? vgpu_backend_device_count(count) : CUDA_ERROR_INVALID_VALUE;
    vgpu_trace("cuDeviceGetCount", r, "-> %d", r == CUDA_SUCCESS ? *count : -1);
    return r;
}

VGPU_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult r = bytes ? vgpu_backend_device_total_mem(dev, bytes) : CUDA_ERROR_INVALID_VALUE;
    vgpu_trace("cuDeviceTotalMem_v2", r, "dev=%d -> %zu", dev, r == CUDA_SUCCESS ? *bytes : 0);
    return r;
}

/* The pre-3.2 ABI with 32-bit sizes: clamp as the real driver does. */
VGPU_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    size_t b = 0;
    CUresult r = bytes ? vgpu_backend_device_total_mem(dev, &b) : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        *bytes = b > UINT_MAX ? UINT_MAX : (unsigned int)b;
    vgpu_trace("cuDeviceTotalMem", r, "dev=%d -> %zu", dev, b);
    return r;
}
