/*
 * Stream capture's state, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/capture.c; the messages: forwarder/remote/spec/
 * cuda.remote).  The graph and the nodes the capture ends on become the
 * guest's handles.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <stdlib.h>

/* The status, the id, the graph, the count, the nodes, their edges: the
 * nodes and the graph become the guest's (the generated reply makes them). */
int vgpu_exec_cuStreamGetCaptureInfo_v3(struct vgpu_exec *x, void *fn,
                                        const struct vgpu_in_cuStreamGetCaptureInfo_v3 *in)
{
    struct vgpu_out_cuStreamGetCaptureInfo_v3 out = { 0 };
    const CUgraphNode *deps = NULL;
    const CUgraphEdgeData *edges = NULL;
    int r = ((CUresult(*)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, const CUgraphNode **,
                          const CUgraphEdgeData **, size_t *))fn)(
        in->hStream, &out.captureStatus_out, &out.id_out, &out.graph_out, &deps, &edges, &out.numDependencies_out);
    if (r == CUDA_SUCCESS && out.numDependencies_out > VGPU_OUT_cuStreamGetCaptureInfo_v3_numDependencies_out_MAX)
        r = CUDA_ERROR_NOT_SUPPORTED; /* more than a guest's reply carries */
    if (r != CUDA_SUCCESS)
        return vgpu_exec_reply(x, r, NULL, 0);
    size_t n = out.numDependencies_out;
    out.dependencies_out = (CUgraphNode *)deps;
    out.edgeData_out = (CUgraphEdgeData *)edges;
    /* No edge data from the driver: default edges, zeros. */
    CUgraphEdgeData *zeros = NULL;
    if (n && !edges) {
        zeros = calloc(n, sizeof(*zeros));
        if (!zeros)
            return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
        out.edgeData_out = zeros;
    }
    int sent = vgpu_exec_reply_cuStreamGetCaptureInfo_v3(x, r, in, &out);
    free(zeros);
    return sent;
}
