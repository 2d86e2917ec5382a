/*
 * A graph's nodes, added by cuGraphAdd*Node (captured kernels are not
 * nodes here): what cuGraphGetNodes and cuGraphNodeGetType report.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdlib.h>

CUresult fake_graph_add_node(CUgraph g, CUgraphNode *out, struct CUgraphNode_st *n)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!g || !fake_object_live(&g->magic, &g->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUgraphNode_st **nodes = realloc(g->nodes, (g->nnodes + 1) * sizeof *nodes);
    struct CUgraphNode_st *node = malloc(sizeof *node);
    if (!nodes || !node) {
        free(node);
        if (nodes)
            g->nodes = nodes;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *node = *n;
    node->magic = GNODE_MAGIC;
    g->nodes = nodes;
    g->nodes[g->nnodes++] = node;
    *out = node;
    return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    ENTER();
    if (!numNodes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hGraph || !fake_object_live(&hGraph->magic, &hGraph->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    if (nodes)
        for (size_t i = 0; i < *numNodes && i < hGraph->nnodes; i++)
            nodes[i] = hGraph->nodes[i];
    *numNodes = hGraph->nnodes;
    return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    ENTER();
    if (!hNode || hNode->magic != GNODE_MAGIC || !type)
        return CUDA_ERROR_INVALID_VALUE;
    *type = hNode->type;
    return CUDA_SUCCESS;
}
