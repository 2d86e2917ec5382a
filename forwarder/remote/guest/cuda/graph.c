/*
 * Graphs' node and edge arrays, the guest's side (forwarder/remote/executor/cuda/graph.c
 * is the other; what crosses: docs/design/remote.md): the caller's room goes to the
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
#define MAX_NODES 4096

/* Words out: the handle, the room, which arrays the caller passed (bit 0
 * the first list, bit 1 the second, bit 2 the edges).  Back: the count,
 * then each array passed, room entries of 8 bytes. */
static CUresult arrays(unsigned slot, void *h, CUgraphNode *a, CUgraphNode *b, CUgraphEdgeData *edges, size_t *num)
{
    if (!num)
        return CUDA_ERROR_INVALID_VALUE;
    size_t room = (a || b || edges) ? *num : 0;
    if (room > MAX_NODES)
        return vgpu_remote_refuse(slot);
    uint64_t q[3] = { (uint64_t)(uintptr_t)h, room, (a ? 1u : 0u) | (b ? 2u : 0u) | (edges ? 4u : 0u) }, n = 0;
    uint64_t *buf = room ? malloc(3 * room * sizeof(uint64_t)) : NULL;
    if (room && !buf)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t got = 0;
    struct iovec req = { q, sizeof(q) }, rep[2] = { { &n, sizeof(n) }, { buf, 3 * room * sizeof(uint64_t) } };
    CUresult r = vgpu_remote_call(slot, &req, 1, rep, 2, &got);
    unsigned passed = (a != NULL) + (b != NULL) + (edges != NULL);
    if (r == CUDA_SUCCESS && (got != sizeof(n) + passed * room * sizeof(uint64_t) || (room && n > room)))
        r = CUDA_ERROR_UNKNOWN;
    if (r == CUDA_SUCCESS) {
        const uint64_t *at = buf;
        void *out[3] = { a, b, edges };
        for (int k = 0; k < 3; k++) {
            if (!out[k])
                continue;
            for (size_t i = 0; i < room; i++)
                if (at[i] != UINT64_MAX)
                    memcpy((char *)out[k] + i * 8, &at[i], 8); /* a node handle or an edge: 8 bytes each */
            at += room;
        }
        *num = n;
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
