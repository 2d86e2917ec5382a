/* Which device is current; see current.h. */
#include "vgpu_backend/join/current.h"

#include "forwarder/dispatch.h"
#include "vgpu_backend/join/cuda_devices.h"
#include "vgpu_cuda_slots.h"

#include <stdatomic.h>

/* Each device's primary context: written by vgpu_primary_set (under the
 * quota's contexts lock), read lock-free; owned by this file. */
static CUcontext _Atomic primary_ctx[VGPU_MAX_CUDA_DEVICES];
static _Atomic int primary_span; /* 1 + the highest device with a primary context */

int vgpu_primary_device(CUcontext ctx)
{
    int span = atomic_load_explicit(&primary_span, memory_order_acquire);
    for (int d = 0; d < span; d++)
        if (atomic_load_explicit(&primary_ctx[d], memory_order_relaxed) == ctx)
            return d;
    return -1;
}

CUcontext vgpu_primary_set(CUdevice dev, CUcontext ctx)
{
    if (dev < 0 || dev >= VGPU_MAX_CUDA_DEVICES)
        return NULL;
    CUcontext was = atomic_exchange(&primary_ctx[dev], ctx);
    if (ctx && atomic_load(&primary_span) <= dev)
        atomic_store(&primary_span, dev + 1);
    return was;
}

/* The current context and its CUDA device: 0, or -1 when there is none. */
static int current_device(CUcontext *ctx, CUdevice *dev)
{
    if (VGPU_REAL_CUDA(cuCtxGetCurrent)(ctx) != CUDA_SUCCESS || !*ctx)
        return -1;
    /* A primary context's device is known without asking the driver. */
    *dev = vgpu_primary_device(*ctx);
    return *dev >= 0 || VGPU_REAL_CUDA(cuCtxGetDevice)(dev) == CUDA_SUCCESS ? 0 : -1;
}

int vgpu_current_vdev(CUcontext *ctx, CUdevice *dev)
{
    CUcontext c;
    CUdevice d;
    if (current_device(&c, &d) != 0)
        return -1;
    if (ctx)
        *ctx = c;
    if (dev)
        *dev = d;
    return vgpu_cuda_vgpu_index(d);
}
