/*
 * Graphs' node and edge arrays, the guest's side (forwarder/remote/executor/cuda/graph.c
 * is the other; the messages: forwarder/remote/spec/cuda.remote): the caller's room goes to the
 * executor, which fills as much of it as the driver does and says the count;
 * entries the driver left (all ones there) are left here too.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name
#define MAX_NODES VGPU_IN_cuGraphGetEdges_v2_firstRoom_MAX

/* The caller's room for each array it passed; back, the count and, in
 * arrays of the guest's own, each array passed. */
static CUresult arrays(unsigned slot, void *h, CUgraphNode *a, CUgraphNode *b, CUgraphEdgeData *edges, size_t *num)
{
    if (!num)
        return CUDA_ERROR_INVALID_VALUE;
    size_t room = (a || b || edges) ? *num : 0;
    if (room > MAX_NODES)
        return vgpu_remote_refuse(slot);
    uint64_t *buf = room ? malloc(3 * room * sizeof(uint64_t)) : NULL;
    if (room && !buf)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct vgpu_in_cuGraphGetEdges_v2 in = {
        .graph = (uint64_t)(uintptr_t)h,
        .firstRoom = a ? room : 0,
        .secondRoom = b ? room : 0,
        .edgeRoom = edges ? room : 0,
    };
    struct vgpu_out_cuGraphGetEdges_v2 out = { .first = buf,
                                               .second = buf ? buf + room : NULL,
                                               .edges = buf ? (CUgraphEdgeData *)(buf + 2 * room) : NULL };
    CUresult r = (CUresult)vgpu_remote_call_cuGraphGetEdges_v2(slot, 0, &in, &out);
    if (r == CUDA_SUCCESS && room && out.count > room)
        r = CUDA_ERROR_UNKNOWN;
    if (r == CUDA_SUCCESS) {
        const uint64_t *from[3] = { out.first, out.second, (const uint64_t *)(void *)out.edges };
        void *to[3] = { a, b, edges };
        for (int k = 0; k < 3; k++) {
            if (!to[k])
                continue;
            for (size_t i = 0; i < room; i++)
                if (from[k][i] != UINT64_MAX)
                    memcpy((char *)to[k] + i * 8, &from[k][i], 8); /* a node handle or an edge: 8 bytes each */
        }
        *num = out.count;
    }
    free(buf);
    return r;
}

CUresult vgpu_remote_guest_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *num)
{
    return arrays(SLOT(cuGraphGetNodes), g, nodes, NULL, NULL, num);
}

CUresult vgpu_remote_guest_cuGraphGetRootNodes(CUgraph g, CUgraphNode *nodes, size_t *num)
{
    return arrays(SLOT(cuGraphGetRootNodes), g, nodes, NULL, NULL, num);
}

CUresult vgpu_remote_guest_cuGraphGetEdges(CUgraph g, CUgraphNode *from, CUgraphNode *to, size_t *num)
{
    return arrays(SLOT(cuGraphGetEdges), g, from, to, NULL, num);
}

CUresult vgpu_remote_guest_cuGraphGetEdges_v2(CUgraph g, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edges,
                                              size_t *num)
{
    return arrays(SLOT(cuGraphGetEdges_v2), g, from, to, edges, num);
}

CUresult vgpu_remote_guest_cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode *deps, size_t *num)
{
    return arrays(SLOT(cuGraphNodeGetDependencies), node, deps, NULL, NULL, num);
}

CUresult vgpu_remote_guest_cuGraphNodeGetDependencies_v2(CUgraphNode node, CUgraphNode *deps, CUgraphEdgeData *edges,
                                                         size_t *num)
{
    return arrays(SLOT(cuGraphNodeGetDependencies_v2), node, deps, NULL, edges, num);
}

CUresult vgpu_remote_guest_cuGraphNodeGetDependentNodes(CUgraphNode node, CUgraphNode *deps, size_t *num)
{
    return arrays(SLOT(cuGraphNodeGetDependentNodes), node, deps, NULL, NULL, num);
}

CUresult vgpu_remote_guest_cuGraphNodeGetDependentNodes_v2(CUgraphNode node, CUgraphNode *deps, CUgraphEdgeData *edges,
                                                           size_t *num)
{
    return arrays(SLOT(cuGraphNodeGetDependentNodes_v2), node, deps, NULL, edges, num);
}
