/*
 * The generic node calls (cuGraphAddNode and _v2, cuGraphNodeSetParams,
 * cuGraphExecNodeSetParams): each node type's parameters, as its own calls
 * take them.  Host, external semaphores', memory operations' and
 * conditional nodes are not modelled (CUDA_ERROR_NOT_SUPPORTED).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/graphs/graphs.h"

#include <string.h>

/* A v3 kernel node's parameters (v2's fields), a v2 memset's (v1's and a context). */
static CUDA_KERNEL_NODE_PARAMS kernel_of(const CUgraphNodeParams *p)
{
    CUDA_KERNEL_NODE_PARAMS k;
    memcpy(&k, &p->kernel, sizeof(k));
    return k;
}

static CUDA_MEMSET_NODE_PARAMS memset_of(const CUgraphNodeParams *p)
{
    return (CUDA_MEMSET_NODE_PARAMS){ .dst = p->memset.dst,
                                      .pitch = p->memset.pitch,
                                      .value = p->memset.value,
                                      .elementSize = p->memset.elementSize,
                                      .width = p->memset.width,
                                      .height = p->memset.height };
}

static CUresult add(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n,
                    CUgraphNodeParams *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        CUDA_KERNEL_NODE_PARAMS k = kernel_of(p);
        return fake_add_kernel_node(out, g, deps, edges, n, &k);
    }
    case CU_GRAPH_NODE_TYPE_MEMSET: {
        CUDA_MEMSET_NODE_PARAMS m = memset_of(p);
        return fake_add_memset_node(out, g, deps, edges, n, &m, p->memset.ctx);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        return fake_add_copy_node(out, g, deps, edges, n, &p->memcpy.copyParams, p->memcpy.copyCtx);
    case CU_GRAPH_NODE_TYPE_GRAPH: return fake_add_child_node(out, g, deps, edges, n, p->graph.graph);
    case CU_GRAPH_NODE_TYPE_EMPTY: {
        struct fake_node *made;
        return fake_graph_add(g, out, CU_GRAPH_NODE_TYPE_EMPTY, deps, edges, n, &made);
    }
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return fake_add_event_node(out, g, deps, edges, n, p->type, p->eventWait.event);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        return fake_add_event_node(out, g, deps, edges, n, p->type, p->eventRecord.event);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
        CUDA_MEM_ALLOC_NODE_PARAMS a;
        memcpy(&a, &p->alloc, sizeof(a)); /* v2's fields are v1's */
        CUresult r = fake_add_alloc_node(out, g, deps, edges, n, &a);
        p->alloc.dptr = a.dptr;
        return r;
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return fake_add_free_node(out, g, deps, edges, n, p->free.dptr);
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
}

CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                           const CUgraphEdgeData *dependencyData, size_t numDependencies, CUgraphNodeParams *nodeParams)
{
    ENTER();
    return add(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams);
}

CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                        size_t numDependencies, CUgraphNodeParams *nodeParams)
{
    ENTER();
    return add(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams);
}

/* The parameters of p, of node's type, into n (for the node, or an executable graph's copy). */
static CUresult params_of(CUgraphNode node, const CUgraphNodeParams *p, struct fake_node *n)
{
    if (!p || !fake_graph_node_live(node) || node->type != p->type)
        return CUDA_ERROR_INVALID_VALUE;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        CUDA_KERNEL_NODE_PARAMS k = kernel_of(p);
        return fake_kernel_node_set(n, &k);
    }
    case CU_GRAPH_NODE_TYPE_MEMSET: {
        CUDA_MEMSET_NODE_PARAMS m = memset_of(p);
        return fake_memset_node_set(n, &m, p->memset.ctx ? p->memset.ctx : node->params->ctx);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY: return fake_copy_node_set(n, &p->memcpy.copyParams, p->memcpy.copyCtx);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        n->event = p->type == CU_GRAPH_NODE_TYPE_WAIT_EVENT ? p->eventWait.event : p->eventRecord.event;
        return n->event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
}

CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams)
{
    ENTER();
    if (!fake_graph_node_live(hNode))
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_node n = *hNode->params;
    CUresult r = params_of(hNode, nodeParams, &n);
    if (r == CUDA_SUCCESS) {
        *hNode->params = n;
        hNode->params->kernel.kernelParams = hNode->params->arg_ptrs;
        for (unsigned a = 0; a < FAKE_MAX_ARGS; a++)
            hNode->params->arg_ptrs[a] = &hNode->params->args[a];
    }
    return r;
}

CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *nodeParams)
{
    ENTER();
    struct fake_node n = { 0 };
    CUresult r = params_of(hNode, nodeParams, &n);
    return r == CUDA_SUCCESS ? fake_exec_set(hGraphExec, hNode, &n) : r;
}
