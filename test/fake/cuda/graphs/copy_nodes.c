/*
 * Memset and copy nodes: their parameters, checked when set (a memset's
 * destination the fake's memory; a copy's sides as a 3D copy's are at
 * launch), got back, and replayed by each launch (exec.c) on the host,
 * as the fake's memsets and copies are.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/graphs/graphs.h"

#include <string.h>

CUresult fake_memset_node_set(struct fake_node *n, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    if (!p || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) || p->dst % p->elementSize)
        return CUDA_ERROR_INVALID_VALUE;
    size_t row = p->width * p->elementSize;
    if (p->height > 1 && p->pitch < row)
        return CUDA_ERROR_INVALID_VALUE;
    if (row && p->height && !fake_range_ok(p->dst, (p->height - 1) * p->pitch + row))
        return CUDA_ERROR_INVALID_VALUE;
    n->memset = *p;
    n->ctx = ctx;
    return CUDA_SUCCESS;
}

CUresult fake_copy_node_set(struct fake_node *n, const CUDA_MEMCPY3D *p, CUcontext ctx)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    n->copy = *p;
    n->ctx = ctx;
    return CUDA_SUCCESS;
}

CUresult fake_add_memset_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                              size_t n, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    struct fake_node probe = { 0 }, *made;
    CUresult r = fake_memset_node_set(&probe, p, ctx);
    if (r == CUDA_SUCCESS)
        r = fake_graph_add(g, out, CU_GRAPH_NODE_TYPE_MEMSET, deps, edges, n, &made);
    if (r == CUDA_SUCCESS)
        *made = (struct fake_node){ .graph = made->graph, .memset = probe.memset, .ctx = ctx };
    return r;
}

CUresult fake_add_copy_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                            size_t n, const CUDA_MEMCPY3D *p, CUcontext ctx)
{
    struct fake_node *made;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fake_graph_add(g, out, CU_GRAPH_NODE_TYPE_MEMCPY, deps, edges, n, &made);
    if (r == CUDA_SUCCESS)
        r = fake_copy_node_set(made, p, ctx);
    return r;
}

CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                              size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
    ENTER();
    return fake_add_memset_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, memsetParams, ctx);
}

CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                              size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    ENTER();
    return fake_add_copy_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, copyParams, ctx);
}

static struct fake_node *node_of(CUgraphNode node, CUgraphNodeType t)
{
    return fake_graph_node_live(node) && node->type == t ? node->params : NULL;
}

CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    ENTER();
    struct fake_node *n = node_of(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
    if (!n || !nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    *nodeParams = n->memset;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    ENTER();
    struct fake_node *n = node_of(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
    return n ? fake_memset_node_set(n, nodeParams, n->ctx) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams)
{
    ENTER();
    struct fake_node *n = node_of(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
    if (!n || !nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    *nodeParams = n->copy;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams)
{
    ENTER();
    struct fake_node *n = node_of(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
    return n ? fake_copy_node_set(n, nodeParams, n->ctx) : CUDA_ERROR_INVALID_VALUE;
}

/* An executable graph's copy of a node's parameters (exec.c). */
CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
    ENTER();
    struct fake_node n = { 0 };
    if (!node_of(hNode, CU_GRAPH_NODE_TYPE_MEMSET))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fake_memset_node_set(&n, memsetParams, ctx);
    return r == CUDA_SUCCESS ? fake_exec_set(hGraphExec, hNode, &n) : r;
}

CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMCPY3D *copyParams,
                                        CUcontext ctx)
{
    ENTER();
    struct fake_node n = { 0 };
    if (!node_of(hNode, CU_GRAPH_NODE_TYPE_MEMCPY))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fake_copy_node_set(&n, copyParams, ctx);
    return r == CUDA_SUCCESS ? fake_exec_set(hGraphExec, hNode, &n) : r;
}
