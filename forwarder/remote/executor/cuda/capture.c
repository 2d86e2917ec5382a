/*
 * Stream capture's state, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/capture.c; what crosses: docs/design/remote.md).  The
 * graph and the nodes the capture ends on become the guest's handles.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <stdlib.h>

#define MAX_DEPS 4096

/* [stream]: the status, the id, the graph, the count, the nodes, their edges. */
int vgpu_exec_cuStreamGetCaptureInfo_v3(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len != 8)
        return vgpu_exec_malformed("cuStreamGetCaptureInfo_v3", len);
    uint64_t stream = vgpu_exec_word(req, 0);
    if (!vgpu_exec_handle_known(x, stream, true))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_HANDLE, NULL, 0);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUgraph graph = NULL;
    const CUgraphNode *deps = NULL;
    const CUgraphEdgeData *edges = NULL;
    size_t n = 0;
    int r = ((CUresult(*)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, const CUgraphNode **,
                          const CUgraphEdgeData **, size_t *))fn)((CUstream)(uintptr_t)stream, &status, &id, &graph,
                                                                  &deps, &edges, &n);
    if (r == CUDA_SUCCESS && n > MAX_DEPS)
        r = CUDA_ERROR_NOT_SUPPORTED; /* more than a guest's reply carries */
    if (r != CUDA_SUCCESS)
        return vgpu_exec_reply(x, r, NULL, 0);
    if (graph)
        vgpu_exec_handle_add(x, (uint64_t)(uintptr_t)graph);
    for (size_t i = 0; i < n; i++)
        vgpu_exec_handle_add(x, (uint64_t)(uintptr_t)deps[i]);
    uint64_t head[4] = { (uint64_t)status, id, (uint64_t)(uintptr_t)graph, n };
    static const CUgraphEdgeData none[1];
    struct iovec v[3] = { { head, sizeof(head) },
                          { (void *)deps, n * sizeof(CUgraphNode) },
                          { edges ? (void *)edges : (void *)none, edges ? n * sizeof(CUgraphEdgeData) : 0 } };
    /* No edge data from the driver: default edges, zeros. */
    CUgraphEdgeData *zeros = NULL;
    if (n && !edges) {
        zeros = calloc(n, sizeof(*zeros));
        if (!zeros)
            return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
        v[2] = (struct iovec){ zeros, n * sizeof(*zeros) };
    }
    int sent = vgpu_exec_reply(x, r, v, 3);
    free(zeros);
    return sent;
}
