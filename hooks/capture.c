/*
 * Stream capture hooks: the backend counts the captures under way, so that
 * the compute share neither breaks one (its bookkeeping queries events,
 * which a capture in the global mode forbids) nor holds launches that a
 * capture records rather than runs (vgpu_backend/compute/capture.c).  The _ptsz
 * variants share the bodies.
 */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_cuda_slots.h"

#include <cuda.h>

#define BEGIN(name, ptsz, s, call)                                       \
    do {                                                                 \
        vgpu_backend_capture_beginning();                                \
        CUresult r_ = (call);                                            \
        vgpu_backend_capture_begun((s), (ptsz), r_);                     \
        vgpu_trace(name, r_, "stream %p", (void *)(s));                  \
        return r_;                                                       \
    } while (0)

VGPU_EXPORT CUresult cuStreamBeginCapture(CUstream s)
{
    BEGIN("cuStreamBeginCapture", false, s, VGPU_REAL_CUDA(cuStreamBeginCapture)(s));
}

VGPU_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s)
{
    BEGIN("cuStreamBeginCapture_ptsz", true, s, VGPU_REAL_CUDA(cuStreamBeginCapture_ptsz)(s));
}

VGPU_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    BEGIN("cuStreamBeginCapture_v2", false, s, VGPU_REAL_CUDA(cuStreamBeginCapture_v2)(s, mode));
}

VGPU_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    BEGIN("cuStreamBeginCapture_v2_ptsz", true, s, VGPU_REAL_CUDA(cuStreamBeginCapture_v2_ptsz)(s, mode));
}

VGPU_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                 const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode)
{
    BEGIN("cuStreamBeginCaptureToGraph", false, s, VGPU_REAL_CUDA(cuStreamBeginCaptureToGraph)(s, g, deps, data, n, mode));
}

VGPU_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                      const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode)
{
    BEGIN("cuStreamBeginCaptureToGraph_ptsz", true, s,
          VGPU_REAL_CUDA(cuStreamBeginCaptureToGraph_ptsz)(s, g, deps, data, n, mode));
}

VGPU_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
    CUresult r = VGPU_REAL_CUDA(cuStreamEndCapture)(s, g);
    vgpu_backend_capture_ended(s, false, r);
    vgpu_trace("cuStreamEndCapture", r, "stream %p", (void *)s);
    return r;
}

VGPU_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
    CUresult r = VGPU_REAL_CUDA(cuStreamEndCapture_ptsz)(s, g);
    vgpu_backend_capture_ended(s, true, r);
    vgpu_trace("cuStreamEndCapture_ptsz", r, "stream %p", (void *)s);
    return r;
}
