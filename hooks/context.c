/*
 * Context hooks: a context takes device memory of its own, so creating one
 * asks the backend first (vgpu_backend_ctx_claim), and destroying one tells
 * it (the context's allocations go with it).  Primary contexts are counted
 * by their retain count, as the driver keeps them.  Setting a limit that
 * reserves memory asks the backend too.
 */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_cuda_slots.h"

#include <cuda.h>

/* The first context of a GPU is measured once made: one the quota cannot
 * hold is then undone (undo) and refused. */
#define CREATE(name, dev, primary, call, undo)                                    \
    do {                                                                          \
        uint64_t token;                                                           \
        CUresult r = vgpu_backend_ctx_claim(dev, primary, &token);                \
        if (r == CUDA_SUCCESS) {                                                  \
            r = call;                                                             \
            CUresult s = vgpu_backend_ctx_settle(dev, primary, r, r ? NULL : *pctx, token); \
            if (r == CUDA_SUCCESS && s != CUDA_SUCCESS) {                         \
                undo;                                                             \
                r = s;                                                            \
            }                                                                     \
        }                                                                         \
        vgpu_trace(name, r, "dev=%d -> %p", dev, r ? NULL : (void *)*pctx);       \
        return r;                                                                 \
    } while (0)
#define DESTROY_NEW VGPU_REAL_CUDA(cuCtxDestroy_v2)(*pctx)

VGPU_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CREATE("cuCtxCreate", dev, false, VGPU_REAL_CUDA(cuCtxCreate)(pctx, flags, dev), DESTROY_NEW);
}

VGPU_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CREATE("cuCtxCreate_v2", dev, false, VGPU_REAL_CUDA(cuCtxCreate_v2)(pctx, flags, dev), DESTROY_NEW);
}

VGPU_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n, unsigned int flags,
                                    CUdevice dev)
{
    CREATE("cuCtxCreate_v3", dev, false, VGPU_REAL_CUDA(cuCtxCreate_v3)(pctx, params, n, flags, dev), DESTROY_NEW);
}

VGPU_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    CREATE("cuCtxCreate_v4", dev, false, VGPU_REAL_CUDA(cuCtxCreate_v4)(pctx, params, flags, dev), DESTROY_NEW);
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CREATE("cuDevicePrimaryCtxRetain", dev, true, VGPU_REAL_CUDA(cuDevicePrimaryCtxRetain)(pctx, dev),
           VGPU_REAL_CUDA(cuDevicePrimaryCtxRelease_v2)(dev));
}

static CUresult destroy(const char *name, CUresult (*real)(CUcontext), CUcontext ctx)
{
    CUresult r = real(ctx);
    if (r == CUDA_SUCCESS)
        vgpu_backend_ctx_destroyed(ctx);
    vgpu_trace(name, r, "%p", (void *)ctx);
    return r;
}

VGPU_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
    return destroy("cuCtxDestroy", VGPU_REAL_CUDA(cuCtxDestroy), ctx);
}

VGPU_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    return destroy("cuCtxDestroy_v2", VGPU_REAL_CUDA(cuCtxDestroy_v2), ctx);
}

static CUresult release(const char *name, CUresult (*real)(CUdevice), CUdevice dev, bool reset)
{
    CUresult r = real(dev);
    if (r == CUDA_SUCCESS)
        vgpu_backend_primary_released(dev, reset);
    vgpu_trace(name, r, "dev=%d", dev);
    return r;
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return release("cuDevicePrimaryCtxRelease", VGPU_REAL_CUDA(cuDevicePrimaryCtxRelease), dev, false);
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return release("cuDevicePrimaryCtxRelease_v2", VGPU_REAL_CUDA(cuDevicePrimaryCtxRelease_v2), dev, false);
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return release("cuDevicePrimaryCtxReset", VGPU_REAL_CUDA(cuDevicePrimaryCtxReset), dev, true);
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    return release("cuDevicePrimaryCtxReset_v2", VGPU_REAL_CUDA(cuDevicePrimaryCtxReset_v2), dev, true);
}

/* Limits that reserve device memory (the stack, heap, printf FIFO) are counted. */
VGPU_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    struct vgpu_limit_claim c;
    CUresult r = vgpu_backend_limit_claim(limit, value, &c);
    if (r == CUDA_SUCCESS) {
        r = VGPU_REAL_CUDA(cuCtxSetLimit)(limit, value);
        vgpu_backend_limit_settle(&c, r);
    }
    vgpu_trace("cuCtxSetLimit", r, "%d, %zu", (int)limit, value);
    return r;
}
