/*
 * Kernel nodes: a built-in kernel (../modules/kernels.c) and its
 * arguments, taken when the node is made or its parameters set (as the
 * driver copies kernelParams), checked at each launch (exec.c), given back
 * as an array the node owns; and their attributes, kept as set.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/graphs/graphs.h"

#include <string.h>

CUresult fake_kernel_node_set(struct fake_node *n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUfunction f = p->func ? p->func : (CUfunction)(void *)p->kern;
    const struct CUfunc_st *k = fake_kernel_of(f);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!p->kernelParams == !p->extra && k->nargs)
        return CUDA_ERROR_INVALID_VALUE;
    /* extra: one buffer of the arguments, each at its offset (cuFuncGetParamInfo's). */
    const char *buffer = NULL;
    size_t buffer_size = 0;
    for (unsigned i = 0; p->extra && p->extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buffer = p->extra[i + 1];
        else if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && p->extra[i + 1])
            buffer_size = *(const size_t *)p->extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned long long args[FAKE_MAX_ARGS] = { 0 };
    for (unsigned i = 0; i < k->nargs; i++) {
        size_t offset = 0, size = 0;
        if (p->kernelParams) {
            memcpy(&args[i], p->kernelParams[i], k->arg_size[i]);
            continue;
        }
        cuFuncGetParamInfo(f, i, &offset, &size);
        if (!buffer || offset + size > buffer_size)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(&args[i], buffer + offset, size);
    }
    n->kernel = *p;
    n->kernel.extra = NULL;
    n->kernel.kernelParams = n->arg_ptrs;
    memcpy(n->args, args, sizeof(args));
    for (unsigned i = 0; i < FAKE_MAX_ARGS; i++)
        n->arg_ptrs[i] = &n->args[i];
    return CUDA_SUCCESS;
}

CUresult fake_add_kernel_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                              size_t n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    struct fake_node probe = { 0 }, *made;
    CUresult r = fake_kernel_node_set(&probe, p); /* checked before the node is made */
    if (r == CUDA_SUCCESS)
        r = fake_graph_add(g, out, CU_GRAPH_NODE_TYPE_KERNEL, deps, edges, n, &made);
    if (r == CUDA_SUCCESS)
        r = fake_kernel_node_set(made, p);
    return r;
}

/* A v1 node's parameters, as v2's. */
static CUDA_KERNEL_NODE_PARAMS from_v1(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    CUDA_KERNEL_NODE_PARAMS v2 = { 0 };
    memcpy(&v2, p, sizeof(*p)); /* v1's fields are v2's first ones */
    return v2;
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                 size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    ENTER();
    return fake_add_kernel_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams);
}

CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                              size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    ENTER();
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS v2 = from_v1(nodeParams);
    return fake_add_kernel_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, &v2);
}

static struct fake_node *kernel_node(CUgraphNode node)
{
    return fake_graph_node_live(node) && node->type == CU_GRAPH_NODE_TYPE_KERNEL ? node->params : NULL;
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    ENTER();
    struct fake_node *n = kernel_node(hNode);
    if (!n || !nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    *nodeParams = n->kernel;
    return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    ENTER();
    struct fake_node *n = kernel_node(hNode);
    if (!n || !nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(nodeParams, &n->kernel, sizeof(*nodeParams));
    return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    ENTER();
    struct fake_node *n = kernel_node(hNode);
    return n ? fake_kernel_node_set(n, nodeParams) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    ENTER();
    struct fake_node *n = kernel_node(hNode);
    if (!n || !nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS v2 = from_v1(nodeParams);
    return fake_kernel_node_set(n, &v2);
}

/* An executable graph's copy of the node's parameters. */
static CUresult exec_set(CUgraphExec x, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p)
{
    struct fake_node n = { 0 };
    if (!kernel_node(node))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fake_kernel_node_set(&n, p);
    return r == CUDA_SUCCESS ? fake_exec_set(x, node, &n) : r;
}

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                           const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    ENTER();
    return exec_set(hGraphExec, hNode, nodeParams);
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    ENTER();
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS v2 = from_v1(nodeParams);
    return exec_set(hGraphExec, hNode, &v2);
}

/* ---- attributes: kept as set (at most FAKE_NODE_ATTRS of them); one never set reads as zeros ---- */

CUresult cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr, CUkernelNodeAttrValue *value_out)
{
    ENTER();
    struct fake_node *n = kernel_node(hNode);
    if (!n || !value_out || !attr)
        return CUDA_ERROR_INVALID_VALUE;
    memset(value_out, 0, sizeof(*value_out));
    for (int i = 0; i < FAKE_NODE_ATTRS; i++)
        if (n->attrs[i].id == attr)
            *value_out = n->attrs[i].value;
    return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr, const CUkernelNodeAttrValue *value)
{
    ENTER();
    struct fake_node *n = kernel_node(hNode);
    if (!n || !value || !attr)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < FAKE_NODE_ATTRS; i++)
        if (n->attrs[i].id == attr || !n->attrs[i].id) {
            n->attrs[i].id = attr;
            n->attrs[i].value = *value;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src)
{
    ENTER();
    struct fake_node *to = kernel_node(dst), *from = kernel_node(src);
    if (!to || !from)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(to->attrs, from->attrs, sizeof(to->attrs));
    return CUDA_SUCCESS;
}
