/*
 * A graph's nodes, added by cuGraphAdd*Node (captured kernels are not
 * nodes here): what cuGraphGetNodes and cuGraphNodeGetType report, their
 * removal, and the nodes of no work of their own (empty, event, child
 * graph).  Edges: edges.c; each type's parameters: kernel_nodes.c,
 * copy_nodes.c, graph_memory.c.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/graphs/graphs.h"

#include <stdlib.h>
#include <string.h>

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

int fake_graph_has(const struct CUgraph_st *g, CUgraphNode node)
{
    for (size_t i = 0; g && i < g->nnodes; i++)
        if (g->nodes[i] == node)
            return 1;
    return 0;
}

int fake_graph_node_live(CUgraphNode n)
{
    return n && n->magic == GNODE_MAGIC && n->params && fake_graph_has(n->params->graph, n);
}

CUresult fake_graph_add(CUgraph g, CUgraphNode *out, CUgraphNodeType t, const CUgraphNode *deps,
                        const CUgraphEdgeData *edges, size_t n, struct fake_node **made)
{
    if (!out || (n && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    if (!g || !fake_object_live(&g->magic, &g->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < n; i++)
        if (!fake_graph_has(g, deps[i]))
            return CUDA_ERROR_INVALID_VALUE;
    struct fake_node *params = calloc(1, sizeof(*params)); /* never freed: a stale handle stays readable */
    struct fake_edge *grown = realloc(g->edges, (g->nedges + n + 1) * sizeof(*grown));
    if (grown)
        g->edges = grown;
    if (!params || !grown) {
        free(params);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    params->graph = g;
    struct CUgraphNode_st node = { .type = t, .params = params };
    CUresult r = fake_graph_add_node(g, out, &node);
    if (r != CUDA_SUCCESS) {
        free(params);
        return r;
    }
    for (size_t i = 0; i < n; i++)
        g->edges[g->nedges++] = (struct fake_edge){ deps[i], *out, edges ? edges[i] : (CUgraphEdgeData){ 0 } };
    *made = params;
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

/* The node leaves its graph, with its edges; its memory stays (a stale
 * handle is refused, not read after free). */
CUresult cuGraphDestroyNode(CUgraphNode hNode)
{
    ENTER();
    if (!fake_graph_node_live(hNode))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = hNode->params->graph;
    size_t k = 0;
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i] != hNode)
            g->nodes[k++] = g->nodes[i];
    g->nnodes = k;
    k = 0;
    for (size_t i = 0; i < g->nedges; i++)
        if (g->edges[i].from != hNode && g->edges[i].to != hNode)
            g->edges[k++] = g->edges[i];
    g->nedges = k;
    return CUDA_SUCCESS;
}

/* ---- nodes of no work of their own ---- */

CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                             size_t numDependencies)
{
    ENTER();
    struct fake_node *n;
    return fake_graph_add(hGraph, phGraphNode, CU_GRAPH_NODE_TYPE_EMPTY, dependencies, NULL, numDependencies, &n);
}

CUresult fake_add_event_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                             size_t n, CUgraphNodeType t, CUevent e)
{
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    struct fake_node *made;
    CUresult r = fake_graph_add(g, out, t, deps, edges, n, &made);
    if (r == CUDA_SUCCESS)
        made->event = e;
    return r;
}

CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                   size_t numDependencies, CUevent event)
{
    ENTER();
    return fake_add_event_node(phGraphNode, hGraph, dependencies, NULL, numDependencies,
                               CU_GRAPH_NODE_TYPE_EVENT_RECORD, event);
}

CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                 size_t numDependencies, CUevent event)
{
    ENTER();
    return fake_add_event_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, CU_GRAPH_NODE_TYPE_WAIT_EVENT,
                               event);
}

static CUresult event_of(CUgraphNode node, CUgraphNodeType t, CUevent *out)
{
    if (!fake_graph_node_live(node) || node->type != t || !out)
        return CUDA_ERROR_INVALID_VALUE;
    *out = node->params->event;
    return CUDA_SUCCESS;
}

CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    ENTER();
    return event_of(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event_out);
}

CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    ENTER();
    return event_of(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event_out);
}

/* The child graph is copied into the node, as the driver clones it. */
CUresult fake_add_child_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                             size_t n, CUgraph child)
{
    if (!child || !fake_object_live(&child->magic, &child->alive, GRAPH_MAGIC) || child == g)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraph copy = fake_graph_copy(child);
    if (!copy)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_node *made;
    CUresult r = fake_graph_add(g, out, CU_GRAPH_NODE_TYPE_GRAPH, deps, edges, n, &made);
    if (r == CUDA_SUCCESS)
        made->child = copy;
    return r;
}

CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  size_t numDependencies, CUgraph childGraph)
{
    ENTER();
    return fake_add_child_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, childGraph);
}

CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph)
{
    ENTER();
    if (!fake_graph_node_live(hNode) || hNode->type != CU_GRAPH_NODE_TYPE_GRAPH || !phGraph)
        return CUDA_ERROR_INVALID_VALUE;
    *phGraph = hNode->params->child;
    return CUDA_SUCCESS;
}
