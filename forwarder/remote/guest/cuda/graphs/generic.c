/*
 * The generic node calls, the guest's side (cuGraphAddNode and _v2,
 * cuGraphNodeSetParams, cuGraphExecNodeSetParams; the executor's:
 * forwarder/remote/executor/cuda/graphs/generic.c): one message, the
 * parameters' union as given, its pointers cleared and their data beside
 * it (a kernel's parameters packed as a launch's, an allocation's access
 * descriptors), a copy's sides resolved as a copy node's are (nodes.c).
 * Host, external semaphores', batched memory operations' and conditional
 * nodes are refused here, as the executor refuses them.  The carried
 * cuGraphMemsetNodeSetParams and cuGraphExecMemsetNodeSetParams cross as
 * these calls' messages, so that the executor checks a memset's
 * destination.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/graphs/graphs.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

/* What a generic call sends besides its own fields: the union's data, in
 * in (pk's bytes malloc'd, freed by done()). */
struct generic {
    struct vgpu_in_cuGraphAddNode_v2 in;
    struct vgpu_remote_params pk;
    CUgraphEdgeData *zeros;
};

static void done(struct generic *g)
{
    free(g->pk.bytes);
    free(g->zeros);
}

/* The union and what its pointers point to, into g: 0, or the code to
 * return (slot's refusal of a node type not carried). */
static CUresult union_of(unsigned slot, const CUgraphNodeParams *p, struct generic *g)
{
    memset(g, 0, sizeof(*g));
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    g->in.nodeParams = *p;
    CUgraphNodeParams *u = &g->in.nodeParams;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        CUfunction f = p->kernel.func ? p->kernel.func : (CUfunction)(void *)p->kernel.kern;
        if (!f)
            return CUDA_ERROR_INVALID_VALUE;
        CUresult r = vgpu_remote_pack_params(f, p->kernel.kernelParams, p->kernel.extra, &g->pk);
        if (r != CUDA_SUCCESS)
            return r;
        u->kernel.kernelParams = u->kernel.extra = NULL;
        g->in.count = g->pk.count;
        g->in.sizes = g->pk.sizes;
        g->in.params = g->pk.bytes;
        g->in.params_size = g->pk.len;
        return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY: return vgpu_remote_graph_copy(&p->memcpy.copyParams, &u->memcpy.copyParams);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        if (p->alloc.accessDescCount && !p->alloc.accessDescs)
            return CUDA_ERROR_INVALID_VALUE;
        g->in.accessDescCount = p->alloc.accessDescCount;
        g->in.accessDescs = p->alloc.accessDescs;
        u->alloc.accessDescs = NULL;
        return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_MEMSET:
    case CU_GRAPH_NODE_TYPE_GRAPH:
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return CUDA_SUCCESS; /* plain data and handles: the executor checks them */
    default:
        return vgpu_remote_refuse_why(slot, "a node of this type (a host function's, external semaphores', batched "
                                            "memory operations', a conditional one) is not carried");
    }
}

static CUresult add(unsigned slot, CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                    const CUgraphEdgeData *data, size_t ndeps, CUgraphNodeParams *p)
{
    if (!node)
        return CUDA_ERROR_INVALID_VALUE;
    struct generic g;
    CUresult r = union_of(slot, p, &g);
    if (r == CUDA_SUCCESS && !data && ndeps && ndeps <= VGPU_IN_cuGraphAddNode_v2_numDependencies_MAX &&
        !(g.zeros = calloc(ndeps, sizeof(*g.zeros))))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r != CUDA_SUCCESS) {
        done(&g);
        return r;
    }
    g.in.hGraph = graph;
    g.in.numDependencies = ndeps;
    g.in.dependencies = deps;
    g.in.dependencyData = data ? data : g.zeros; /* zeros: the default edges */
    struct vgpu_out_cuGraphAddNode_v2 out = { 0 };
    r = (CUresult)vgpu_remote_call_cuGraphAddNode_v2(slot, 0, &g.in, &out);
    done(&g);
    if (r == CUDA_SUCCESS) {
        *node = out.phGraphNode;
        if (p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
            p->alloc.dptr = out.dptr;
    }
    return r;
}

CUresult vgpu_remote_guest_cuGraphAddNode_v2(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                             const CUgraphEdgeData *data, size_t ndeps, CUgraphNodeParams *p)
{
    return add(SLOT(cuGraphAddNode_v2), node, graph, deps, data, ndeps, p);
}

CUresult vgpu_remote_guest_cuGraphAddNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t ndeps,
                                          CUgraphNodeParams *p)
{
    return add(SLOT(cuGraphAddNode), node, graph, deps, NULL, ndeps, p);
}

/* A node's parameters set (exec NULL), or an executable graph's copy of them. */
static CUresult set(unsigned slot, CUgraphExec exec, CUgraphNode node, const CUgraphNodeParams *p)
{
    struct generic g;
    CUresult r = union_of(slot, p, &g);
    g.in.hGraphExec = (uint64_t)(uintptr_t)exec;
    g.in.hNode = (uint64_t)(uintptr_t)node;
    struct vgpu_out_cuGraphAddNode_v2 out = { 0 }; /* nothing made: zeros */
    if (r == CUDA_SUCCESS)
        r = (CUresult)vgpu_remote_call_cuGraphAddNode_v2(slot, 0, &g.in, &out);
    done(&g);
    return r;
}

CUresult vgpu_remote_guest_cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams *p)
{
    return set(SLOT(cuGraphNodeSetParams), NULL, node, p);
}

CUresult vgpu_remote_guest_cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node, CUgraphNodeParams *p)
{
    return set(SLOT(cuGraphExecNodeSetParams), exec, node, p);
}

/* A memset node's parameters as the union's (its context: ctx). */
static CUgraphNodeParams memset_node(const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    return (CUgraphNodeParams){ .type = CU_GRAPH_NODE_TYPE_MEMSET,
                                .memset = { .dst = p->dst,
                                            .pitch = p->pitch,
                                            .value = p->value,
                                            .elementSize = p->elementSize,
                                            .width = p->width,
                                            .height = p->height,
                                            .ctx = ctx } };
}

/* The context NULL: the executor sets the node's own parameters (its
 * context kept) by cuGraphMemsetNodeSetParams. */
CUresult vgpu_remote_guest_cuGraphMemsetNodeSetParams(CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams u = memset_node(p, NULL);
    return set(SLOT(cuGraphNodeSetParams), NULL, node, &u);
}

CUresult vgpu_remote_guest_cuGraphExecMemsetNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                          const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams u = memset_node(p, ctx);
    return set(SLOT(cuGraphExecNodeSetParams), exec, node, &u);
}
