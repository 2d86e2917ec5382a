/*
 * Synchronisation hooks: a thread that waits for its own GPU work (a
 * stream, an event, a context) keeps its vGPU's turn.  Under a compute
 * share the arbiter takes a vGPU that launches nothing for a while for
 * idle; one whose process is blocked until a graph of 10 ms or a long
 * kernel ends is not, and the backend counts it busy meanwhile.  With no
 * share, each costs a load or two.
 */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_cuda_slots.h"

#include <cuda.h>

VGPU_EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    void *busy = vgpu_backend_sync_begin();
    CUresult r = VGPU_REAL_CUDA(cuStreamSynchronize)(s);
    vgpu_backend_sync_end(busy);
    vgpu_trace("cuStreamSynchronize", r, "%p", (void *)s);
    return r;
}

VGPU_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s)
{
    void *busy = vgpu_backend_sync_begin();
    CUresult r = VGPU_REAL_CUDA(cuStreamSynchronize_ptsz)(s);
    vgpu_backend_sync_end(busy);
    vgpu_trace("cuStreamSynchronize_ptsz", r, "%p", (void *)s);
    return r;
}

VGPU_EXPORT CUresult cuEventSynchronize(CUevent e)
{
    void *busy = vgpu_backend_sync_begin();
    CUresult r = VGPU_REAL_CUDA(cuEventSynchronize)(e);
    vgpu_backend_sync_end(busy);
    vgpu_trace("cuEventSynchronize", r, "%p", (void *)e);
    return r;
}

VGPU_EXPORT CUresult cuCtxSynchronize(void)
{
    void *busy = vgpu_backend_sync_begin();
    CUresult r = VGPU_REAL_CUDA(cuCtxSynchronize)();
    vgpu_backend_sync_end(busy);
    vgpu_trace("cuCtxSynchronize", r, "%s", "current context");
    return r;
}

VGPU_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    void *busy = vgpu_backend_sync_begin();
    CUresult r = VGPU_REAL_CUDA(cuCtxSynchronize_v2)(ctx);
    vgpu_backend_sync_end(busy);
    vgpu_trace("cuCtxSynchronize_v2", r, "%p", (void *)ctx);
    return r;
}
