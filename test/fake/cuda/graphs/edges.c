/*
 * The edges between a graph's nodes: added with a node (nodes.c) or by
 * cuGraphAddDependencies, removed, and reported (cuGraphGetEdges, a
 * node's dependencies and dependents, the roots); and the order a launch
 * runs the nodes in (exec.c).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/graphs/graphs.h"

#include <stdlib.h>
#include <string.h>

static int live_graph(CUgraph g)
{
    return g && fake_object_live(&g->magic, &g->alive, GRAPH_MAGIC);
}

static CUresult add_edges(int v2, CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                          const CUgraphEdgeData *data, size_t n)
{
    (void)v2;
    if (!live_graph(g))
        return CUDA_ERROR_INVALID_HANDLE;
    if (n && (!from || !to))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++)
        if (!fake_graph_has(g, from[i]) || !fake_graph_has(g, to[i]) || from[i] == to[i])
            return CUDA_ERROR_INVALID_VALUE;
    struct fake_edge *grown = realloc(g->edges, (g->nedges + n + 1) * sizeof(*grown));
    if (!grown)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->edges = grown;
    for (size_t i = 0; i < n; i++)
        g->edges[g->nedges++] = (struct fake_edge){ from[i], to[i], data ? data[i] : (CUgraphEdgeData){ 0 } };
    return CUDA_SUCCESS;
}

static CUresult remove_edges(int v2, CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                             const CUgraphEdgeData *data, size_t n)
{
    (void)v2, (void)data;
    if (!live_graph(g))
        return CUDA_ERROR_INVALID_HANDLE;
    if (n && (!from || !to))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0, before = g->nedges;
        for (size_t j = 0; j < g->nedges; j++)
            if (g->edges[j].from != from[i] || g->edges[j].to != to[i])
                g->edges[k++] = g->edges[j];
        g->nedges = k;
        if (k == before)
            return CUDA_ERROR_INVALID_VALUE; /* no such edge */
    }
    return CUDA_SUCCESS;
}

CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies)
{
    ENTER();
    return add_edges(0, hGraph, from, to, NULL, numDependencies);
}

CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                   const CUgraphEdgeData *edgeData, size_t numDependencies)
{
    ENTER();
    return add_edges(1, hGraph, from, to, edgeData, numDependencies);
}

CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                   size_t numDependencies)
{
    ENTER();
    return remove_edges(0, hGraph, from, to, NULL, numDependencies);
}

CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                      const CUgraphEdgeData *edgeData, size_t numDependencies)
{
    ENTER();
    return remove_edges(1, hGraph, from, to, edgeData, numDependencies);
}

/* The edges that match (from, to: NULL for any), into the caller's arrays
 * (each NULL when not wanted) as far as *num allows; *num: how many match. */
static void report(const struct CUgraph_st *g, CUgraphNode from, CUgraphNode to, CUgraphNode *a, CUgraphNode *b,
                   CUgraphEdgeData *data, size_t *num)
{
    size_t room = *num, count = 0;
    for (size_t i = 0; i < g->nedges; i++) {
        const struct fake_edge *e = &g->edges[i];
        if ((from && e->from != from) || (to && e->to != to))
            continue;
        if (count < room) {
            if (a)
                a[count] = from ? e->to : e->from;
            if (b)
                b[count] = e->to;
            if (data)
                data[count] = e->data;
        }
        count++;
    }
    *num = count;
}

static CUresult get_edges(CUgraph g, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *data, size_t *num)
{
    if (!num)
        return CUDA_ERROR_INVALID_VALUE;
    if (!live_graph(g))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!from && !to && !data)
        *num = 0;
    report(g, NULL, NULL, from, to, data, num);
    return CUDA_SUCCESS;
}

CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges)
{
    ENTER();
    return get_edges(hGraph, from, to, NULL, numEdges);
}

CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edgeData,
                            size_t *numEdges)
{
    ENTER();
    return get_edges(hGraph, from, to, edgeData, numEdges);
}

/* A node's dependencies (dependents 0) or dependents (1). */
static CUresult neighbours(CUgraphNode node, int dependents, CUgraphNode *nodes, CUgraphEdgeData *data, size_t *num)
{
    if (!num || !fake_graph_node_live(node))
        return CUDA_ERROR_INVALID_VALUE;
    if (!nodes && !data)
        *num = 0;
    report(node->params->graph, dependents ? node : NULL, dependents ? NULL : node, nodes, NULL, data, num);
    return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies, size_t *numDependencies)
{
    ENTER();
    return neighbours(hNode, 0, dependencies, NULL, numDependencies);
}

CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *dependencies, CUgraphEdgeData *edgeData,
                                       size_t *numDependencies)
{
    ENTER();
    return neighbours(hNode, 0, dependencies, edgeData, numDependencies);
}

CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes, size_t *numDependentNodes)
{
    ENTER();
    return neighbours(hNode, 1, dependentNodes, NULL, numDependentNodes);
}

CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode *dependentNodes, CUgraphEdgeData *edgeData,
                                         size_t *numDependentNodes)
{
    ENTER();
    return neighbours(hNode, 1, dependentNodes, edgeData, numDependentNodes);
}

static size_t incoming(const struct CUgraph_st *g, CUgraphNode node)
{
    size_t n = 0;
    for (size_t i = 0; i < g->nedges; i++)
        n += g->edges[i].to == node;
    return n;
}

CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes)
{
    ENTER();
    if (!numRootNodes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!live_graph(hGraph))
        return CUDA_ERROR_INVALID_HANDLE;
    size_t room = rootNodes ? *numRootNodes : 0, count = 0;
    for (size_t i = 0; i < hGraph->nnodes; i++)
        if (!incoming(hGraph, hGraph->nodes[i])) {
            if (count < room)
                rootNodes[count] = hGraph->nodes[i];
            count++;
        }
    *numRootNodes = count;
    return CUDA_SUCCESS;
}

/* Kahn's order: the first node (as added) whose dependencies are all
 * placed, again and again. */
CUgraphNode *fake_graph_order(const struct CUgraph_st *g)
{
    size_t n = g->nnodes;
    CUgraphNode *order = malloc((n ? n : 1) * sizeof(*order));
    size_t *left = calloc(n ? n : 1, sizeof(*left));
    if (!order || !left) {
        free(order);
        free(left);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        left[i] = incoming(g, g->nodes[i]);
    for (size_t placed = 0; placed < n; placed++) {
        size_t i = 0;
        while (i < n && left[i] != 0)
            i++;
        if (i == n) { /* a cycle */
            free(order);
            free(left);
            return NULL;
        }
        order[placed] = g->nodes[i];
        left[i] = SIZE_MAX;
        for (size_t e = 0; e < g->nedges; e++)
            if (g->edges[e].from == g->nodes[i])
                for (size_t j = 0; j < n; j++)
                    if (g->nodes[j] == g->edges[e].to && left[j] != SIZE_MAX)
                        left[j]--;
    }
    free(left);
    return order;
}
