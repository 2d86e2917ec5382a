/*
 * Nodes of a batch of memory operations (cuGraphAddBatchMemOpNode): their
 * operations checked when set (each address in the fake's memory), got
 * back, and done by each launch on the host (exec.c): a write's value
 * written; a wait met at once (the fake runs nothing meanwhile that could
 * write the value); a barrier or a flush, nothing.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/graphs/graphs.h"

#include <string.h>

CUresult fake_mem_op_node_set(struct fake_node *n, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    if (!p || (p->count && !p->paramArray))
        return CUDA_ERROR_INVALID_VALUE;
    if (p->count > FAKE_NODE_OPS)
        return CUDA_ERROR_NOT_SUPPORTED;
    for (unsigned i = 0; i < p->count; i++) {
        const CUstreamBatchMemOpParams *op = &p->paramArray[i];
        switch (op->operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            if (!fake_range_ok(op->waitValue.address, op->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? 4 : 8))
                return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            if (!fake_range_ok(op->writeValue.address, op->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? 4 : 8))
                return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        case CU_STREAM_MEM_OP_BARRIER: break;
        default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    memcpy(n->ops, p->paramArray, p->count * sizeof(*n->ops));
    n->nops = p->count;
    n->op_flags = p->flags;
    n->ctx = p->ctx;
    return CUDA_SUCCESS;
}

void fake_mem_ops_run(const struct fake_node *n)
{
    for (unsigned i = 0; i < n->nops; i++) {
        const CUstreamBatchMemOpParams *op = &n->ops[i];
        if (op->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32)
            memcpy((void *)(uintptr_t)op->writeValue.address, &op->writeValue.value, 4);
        else if (op->operation == CU_STREAM_MEM_OP_WRITE_VALUE_64)
            memcpy((void *)(uintptr_t)op->writeValue.address, &op->writeValue.value64, 8);
    }
}

CUresult cuGraphAddBatchMemOpNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  size_t numDependencies, const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams)
{
    ENTER();
    struct fake_node probe = { 0 }, *made;
    CUresult r = fake_mem_op_node_set(&probe, nodeParams);
    if (r == CUDA_SUCCESS)
        r = fake_graph_add(hGraph, phGraphNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, dependencies, NULL, numDependencies,
                           &made);
    if (r == CUDA_SUCCESS)
        r = fake_mem_op_node_set(made, nodeParams);
    return r;
}

static struct fake_node *mem_op_node(CUgraphNode node)
{
    return fake_graph_node_live(node) && node->type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP ? node->params : NULL;
}

/* The array is the node's own. */
CUresult cuGraphBatchMemOpNodeGetParams(CUgraphNode hNode, CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams_out)
{
    ENTER();
    struct fake_node *n = mem_op_node(hNode);
    if (!n || !nodeParams_out)
        return CUDA_ERROR_INVALID_VALUE;
    *nodeParams_out =
        (CUDA_BATCH_MEM_OP_NODE_PARAMS){ .ctx = n->ctx, .count = n->nops, .paramArray = n->ops, .flags = n->op_flags };
    return CUDA_SUCCESS;
}

CUresult cuGraphBatchMemOpNodeSetParams(CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams)
{
    ENTER();
    struct fake_node *n = mem_op_node(hNode);
    return n ? fake_mem_op_node_set(n, nodeParams) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphExecBatchMemOpNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                            const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams)
{
    ENTER();
    struct fake_node n = { 0 };
    if (!mem_op_node(hNode))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fake_mem_op_node_set(&n, nodeParams);
    return r == CUDA_SUCCESS ? fake_exec_set(hGraphExec, hNode, &n) : r;
}
