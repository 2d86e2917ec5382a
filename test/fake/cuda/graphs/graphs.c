/*
 * Graphs: the kernels stream capture recorded (../streams/capture.c), the
 * nodes added to them by hand (nodes.c) and their edges (edges.c); a
 * graph copied (a child graph node's, cuGraphClone); a graph's description
 * in DOT.  Executable graphs: exec.c.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/graphs/graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fake_kernels_append(struct kernel_list *l, const struct fake_op *op)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        struct fake_op *ops = realloc(l->ops, cap * sizeof *ops);
        if (!ops)
            return -1;
        l->ops = ops;
        l->cap = cap;
    }
    l->ops[l->count++] = *op;
    return 0;
}

struct CUgraph_st *fake_graph_new(void)
{
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (g) {
        g->magic = GRAPH_MAGIC;
        g->alive = 1;
    }
    return g;
}

/* ------------------------------------------------------------------------ */
/* Graphs                                                                   */

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    ENTER();
    if (!phGraph || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = fake_graph_new();
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = g;
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
    ENTER();
    return hGraph && fake_kill_object(&hGraph->magic, &hGraph->alive, GRAPH_MAGIC) ? CUDA_SUCCESS
                                                                                   : CUDA_ERROR_INVALID_HANDLE;
}

/* Each node copied (its parameters too, a kernel's arguments pointing into
 * its own copy), each edge between the copies. */
CUgraph fake_graph_copy(CUgraph g)
{
    struct CUgraph_st *c = fake_graph_new();
    if (!c)
        return NULL;
    for (size_t i = 0; i < g->kernels.count; i++)
        if (fake_kernels_append(&c->kernels, &g->kernels.ops[i]) != 0)
            return NULL;
    CUgraphNode *map = calloc(g->nnodes ? g->nnodes : 1, sizeof(*map));
    if (!map)
        return NULL;
    for (size_t i = 0; i < g->nnodes; i++) {
        const struct CUgraphNode_st *from = g->nodes[i];
        struct fake_node *made;
        if (!from->params || fake_graph_add(c, &map[i], from->type, NULL, NULL, 0, &made) != CUDA_SUCCESS) {
            free(map);
            return NULL;
        }
        *made = *from->params;
        made->graph = c;
        made->kernel.kernelParams = made->arg_ptrs;
        for (unsigned a = 0; a < FAKE_MAX_ARGS; a++)
            made->arg_ptrs[a] = &made->args[a];
        map[i]->dev = from->dev;
        map[i]->bytes = from->bytes;
        map[i]->dptr = from->dptr;
    }
    c->edges = malloc((g->nedges ? g->nedges : 1) * sizeof(*c->edges));
    for (size_t e = 0; c->edges && e < g->nedges; e++) {
        struct fake_edge copy = g->edges[e];
        for (size_t i = 0; i < g->nnodes; i++) {
            if (g->nodes[i] == copy.from)
                copy.from = map[i];
            if (g->nodes[i] == copy.to)
                copy.to = map[i];
        }
        c->edges[c->nedges++] = copy;
    }
    free(map);
    return c->edges ? c : NULL;
}

CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    ENTER();
    if (!phGraphClone)
        return CUDA_ERROR_INVALID_VALUE;
    if (!originalGraph || !fake_object_live(&originalGraph->magic, &originalGraph->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    CUgraph c = fake_graph_copy(originalGraph);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraphClone = c;
    return CUDA_SUCCESS;
}

static const char *type_name(CUgraphNodeType t)
{
    static const char *const names[] = { "KERNEL",    "MEMCPY",     "MEMSET",       "HOST",       "GRAPH",
                                         "EMPTY",     "WAIT_EVENT", "EVENT_RECORD", "SEM_SIGNAL", "SEM_WAIT",
                                         "MEM_ALLOC", "MEM_FREE",   "MEM_OP",       "CONDITIONAL" };
    return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

/* The graph's nodes (a kernel's by its name) and edges, in DOT. */
CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags)
{
    ENTER();
    (void)flags;
    if (!path)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hGraph || !fake_object_live(&hGraph->magic, &hGraph->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    FILE *f = fopen(path, "w");
    if (!f)
        return CUDA_ERROR_OPERATING_SYSTEM;
    fprintf(f, "digraph fakegpu {\n");
    for (size_t i = 0; i < hGraph->kernels.count; i++)
        fprintf(f, "  captured%zu [label=\"KERNEL (captured)\"];\n", i);
    for (size_t i = 0; i < hGraph->nnodes; i++) {
        const struct CUgraphNode_st *n = hGraph->nodes[i];
        const struct CUfunc_st *k = n->type == CU_GRAPH_NODE_TYPE_KERNEL && n->params
                                        ? fake_kernel_of(n->params->kernel.func ? (const void *)n->params->kernel.func
                                                                                : (const void *)n->params->kernel.kern)
                                        : NULL;
        fprintf(f, "  node%zu [label=\"%s%s%s\"];\n", i, type_name(n->type), k ? " " : "", k ? k->name : "");
    }
    for (size_t e = 0; e < hGraph->nedges; e++) {
        size_t from = 0, to = 0;
        for (size_t i = 0; i < hGraph->nnodes; i++) {
            from = hGraph->nodes[i] == hGraph->edges[e].from ? i : from;
            to = hGraph->nodes[i] == hGraph->edges[e].to ? i : to;
        }
        fprintf(f, "  node%zu -> node%zu;\n", from, to);
    }
    fprintf(f, "}\n");
    return fclose(f) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
}
