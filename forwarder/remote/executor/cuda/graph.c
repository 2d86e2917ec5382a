/*
 * Graphs' node and edge arrays, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/graph.c; the messages: forwarder/remote/spec/
 * cuda.remote).  The driver fills arrays of the executor's, at most 4096
 * entries, which start all ones (no handle's or edge's value) so that the
 * guest writes back only the entries the driver wrote; every node in them
 * becomes the guest's handle.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <stdlib.h>

/* The call's shape: one list or two (from, to), with edge data or not. */
enum shape { ONE, ONE_EDGES, TWO, TWO_EDGES };

static int arrays(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphGetEdges_v2 *in, enum shape shape,
                  const char *call)
{
    bool two = shape == TWO || shape == TWO_EDGES, with_edges = shape == ONE_EDGES || shape == TWO_EDGES;
    size_t room = in->firstRoom > in->secondRoom ? in->firstRoom : in->secondRoom;
    if (in->edgeRoom > room)
        room = in->edgeRoom;
    /* Every array passed has the room the caller gave; one not passed, none. */
    if ((!two && in->secondRoom) || (!with_edges && in->edgeRoom) || (in->firstRoom && in->firstRoom != room) ||
        (in->secondRoom && in->secondRoom != room) || (in->edgeRoom && in->edgeRoom != room))
        return vgpu_exec_malformed(call, room);
    uint64_t *buf = room ? malloc(3 * room * sizeof(uint64_t)) : NULL;
    if (room && !buf)
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    for (size_t i = 0; i < 3 * room; i++)
        buf[i] = UINT64_MAX;
    uint64_t *first = buf, *second = buf ? buf + room : NULL, *third = buf ? buf + 2 * room : NULL;
    void *a = in->firstRoom ? first : NULL, *b = in->secondRoom ? second : NULL, *e = in->edgeRoom ? third : NULL;
    size_t n = room;
    void *g = (void *)(uintptr_t)in->graph;
    int r;
    switch (shape) {
    case ONE: r = ((CUresult(*)(void *, void *, size_t *))fn)(g, a, &n); break;
    case ONE_EDGES: r = ((CUresult(*)(void *, void *, void *, size_t *))fn)(g, a, e, &n); break;
    case TWO: r = ((CUresult(*)(void *, void *, void *, size_t *))fn)(g, a, b, &n); break;
    default: r = ((CUresult(*)(void *, void *, void *, void *, size_t *))fn)(g, a, b, e, &n); break;
    }
    /* The nodes in them become the guest's (neither NULL nor all ones is a handle). */
    struct vgpu_out_cuGraphGetEdges_v2 out = {
        .count = n, .first = first, .second = second, .edges = (CUgraphEdgeData *)third
    };
    int sent = vgpu_exec_reply_cuGraphGetEdges_v2(x, r, in, &out);
    free(buf);
    return sent;
}

int vgpu_exec_cuGraphGetNodes(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphGetEdges_v2 *in)
{
    return arrays(x, fn, in, ONE, "cuGraphGetNodes");
}

int vgpu_exec_cuGraphGetRootNodes(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphGetEdges_v2 *in)
{
    return arrays(x, fn, in, ONE, "cuGraphGetRootNodes");
}

int vgpu_exec_cuGraphGetEdges(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphGetEdges_v2 *in)
{
    return arrays(x, fn, in, TWO, "cuGraphGetEdges");
}

int vgpu_exec_cuGraphGetEdges_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphGetEdges_v2 *in)
{
    return arrays(x, fn, in, TWO_EDGES, "cuGraphGetEdges_v2");
}

int vgpu_exec_cuGraphNodeGetDependencies(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphGetEdges_v2 *in)
{
    return arrays(x, fn, in, ONE, "cuGraphNodeGetDependencies");
}

int vgpu_exec_cuGraphNodeGetDependencies_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphGetEdges_v2 *in)
{
    return arrays(x, fn, in, ONE_EDGES, "cuGraphNodeGetDependencies_v2");
}

int vgpu_exec_cuGraphNodeGetDependentNodes(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphGetEdges_v2 *in)
{
    return arrays(x, fn, in, ONE, "cuGraphNodeGetDependentNodes");
}

int vgpu_exec_cuGraphNodeGetDependentNodes_v2(struct vgpu_exec *x, void *fn,
                                              const struct vgpu_in_cuGraphGetEdges_v2 *in)
{
    return arrays(x, fn, in, ONE_EDGES, "cuGraphNodeGetDependentNodes_v2");
}
