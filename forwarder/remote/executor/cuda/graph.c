/*
 * Graphs' node and edge arrays, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/graph.c; what crosses: docs/design/remote.md).  The
 * driver fills arrays of the executor's, at most 4096 entries, which start
 * all ones (no handle's or edge's value) so that the guest writes back only
 * the entries the driver wrote; every node in them becomes the guest's
 * handle.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <stdlib.h>

#define MAX_NODES 4096

/* The call's shape: one list or two (from, to), with edge data or not. */
enum shape { ONE, ONE_EDGES, TWO, TWO_EDGES };

static int arrays(struct vgpu_exec *x, void *fn, const void *req, size_t len, enum shape shape, const char *call)
{
    if (len != 24 || vgpu_exec_word(req, 1) > MAX_NODES || vgpu_exec_word(req, 2) > 7)
        return vgpu_exec_malformed(call, len);
    uint64_t h = vgpu_exec_word(req, 0), mask = vgpu_exec_word(req, 2);
    size_t room = vgpu_exec_word(req, 1);
    bool two = shape == TWO || shape == TWO_EDGES, with_edges = shape == ONE_EDGES || shape == TWO_EDGES;
    if ((!two && (mask & 2)) || (!with_edges && (mask & 4)) || (!room && mask) || (room && !mask))
        return vgpu_exec_malformed(call, len);
    if (!h || !vgpu_exec_handle_known(x, h, false))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_HANDLE, NULL, 0);
    uint64_t *buf = room ? malloc(3 * room * sizeof(uint64_t)) : NULL;
    if (room && !buf)
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    for (size_t i = 0; i < 3 * room; i++)
        buf[i] = UINT64_MAX;
    uint64_t *first = buf, *second = buf ? buf + room : NULL, *third = buf ? buf + 2 * room : NULL;
    void *a = mask & 1 ? first : NULL, *b = mask & 2 ? second : NULL, *e = mask & 4 ? third : NULL;
    size_t n = room;
    void *g = (void *)(uintptr_t)h;
    int r;
    switch (shape) {
    case ONE: r = ((CUresult(*)(void *, void *, size_t *))fn)(g, a, &n); break;
    case ONE_EDGES: r = ((CUresult(*)(void *, void *, void *, size_t *))fn)(g, a, e, &n); break;
    case TWO: r = ((CUresult(*)(void *, void *, void *, size_t *))fn)(g, a, b, &n); break;
    default: r = ((CUresult(*)(void *, void *, void *, void *, size_t *))fn)(g, a, b, e, &n); break;
    }
    if (r == CUDA_SUCCESS)
        for (size_t i = 0; i < 2 * room; i++)
            vgpu_exec_handle_add(x, buf[i]); /* neither NULL nor all ones is added */
    uint64_t count = n;
    struct iovec v[4] = { { &count, sizeof(count) },
                          { first, a && r == CUDA_SUCCESS ? room * 8 : 0 },
                          { second, b && r == CUDA_SUCCESS ? room * 8 : 0 },
                          { third, e && r == CUDA_SUCCESS ? room * 8 : 0 } };
    int sent = vgpu_exec_reply(x, r, v, 4);
    free(buf);
    return sent;
}

int vgpu_exec_cuGraphGetNodes(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return arrays(x, fn, req, len, ONE, "cuGraphGetNodes");
}

int vgpu_exec_cuGraphGetRootNodes(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return arrays(x, fn, req, len, ONE, "cuGraphGetRootNodes");
}

int vgpu_exec_cuGraphGetEdges(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return arrays(x, fn, req, len, TWO, "cuGraphGetEdges");
}

int vgpu_exec_cuGraphGetEdges_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return arrays(x, fn, req, len, TWO_EDGES, "cuGraphGetEdges_v2");
}

int vgpu_exec_cuGraphNodeGetDependencies(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return arrays(x, fn, req, len, ONE, "cuGraphNodeGetDependencies");
}

int vgpu_exec_cuGraphNodeGetDependencies_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return arrays(x, fn, req, len, ONE_EDGES, "cuGraphNodeGetDependencies_v2");
}

int vgpu_exec_cuGraphNodeGetDependentNodes(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return arrays(x, fn, req, len, ONE, "cuGraphNodeGetDependentNodes");
}

int vgpu_exec_cuGraphNodeGetDependentNodes_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return arrays(x, fn, req, len, ONE_EDGES, "cuGraphNodeGetDependentNodes_v2");
}
