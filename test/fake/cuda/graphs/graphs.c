/*
 * Graphs: the kernels stream capture recorded (../streams/capture.c), and
 * the nodes added to them (nodes.c).  A graph launch queues the kernels
 * again, or, for a graph with none (made by cuGraphCreate), one kernel of
 * FAKEGPU_KERNEL_NS.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdlib.h>

#define GEXEC_MAGIC 0x43584547u /* "GEXC" */

struct CUgraphExec_st {
    unsigned magic;
    int alive;
    struct kernel_list kernels;                          /* copied at instantiation */
    unsigned long long alloc_bytes[FAKEGPU_MAX_DEVICES]; /* its allocation nodes, per device */
};

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

static CUresult instantiate(CUgraphExec *phGraphExec, CUgraph hGraph)
{
    if (!phGraphExec)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hGraph || !fake_object_live(&hGraph->magic, &hGraph->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < hGraph->kernels.count; i++)
        if (fake_kernels_append(&x->kernels, &hGraph->kernels.ops[i]) != 0) {
            free(x->kernels.ops);
            free(x);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    for (size_t i = 0; i < hGraph->nnodes; i++)
        if (hGraph->nodes[i]->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
            x->alloc_bytes[hGraph->nodes[i]->dev] += hGraph->nodes[i]->bytes;
    x->magic = GEXEC_MAGIC;
    x->alive = 1;
    *phGraphExec = x;
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    ENTER();
    (void)flags;
    return instantiate(phGraphExec, hGraph);
}

/* The CUDA 10 and 11 forms, with an error node and a log the fake never fills. */
static CUresult instantiate_logged(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
                                   size_t bufferSize)
{
    (void)phErrorNode, (void)logBuffer, (void)bufferSize;
    return instantiate(phGraphExec, hGraph);
}

TWO_NAMES(cuGraphInstantiate_v2, cuGraphInstantiate, instantiate_logged,
          (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize),
          phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize)

static CUresult instantiate_with_params(int ptsz, CUgraphExec *phGraphExec, CUgraph hGraph,
                                        CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    (void)ptsz;
    if (!params)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = instantiate(phGraphExec, hGraph);
    params->hErrNode_out = NULL;
    params->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return rc;
}

WITH_PTSZ(cuGraphInstantiateWithParams, instantiate_with_params,
          (CUgraphExec * phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams), phGraphExec,
          hGraph, instantiateParams)

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    ENTER();
    return hGraphExec && fake_kill_object(&hGraphExec->magic, &hGraphExec->alive, GEXEC_MAGIC)
               ? CUDA_SUCCESS
               : CUDA_ERROR_INVALID_HANDLE;
}

/* One launch call (one launch cost) queues every kernel of the graph; a
 * graph with none takes one kernel's time. */
static CUresult graph_launch(int ptsz, CUgraphExec x, CUstream s)
{
    unsigned long long called = fake_now_ns();
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    if (!x || !fake_object_live(&x->magic, &x->alive, GEXEC_MAGIC) || !st)
        return CUDA_ERROR_INVALID_HANDLE;
    const struct fake_op empty = { .ns = fakegpu_config()->kernel_ns };
    const struct fake_op *ops = x->kernels.count ? x->kernels.ops : &empty;
    size_t count = x->kernels.count ? x->kernels.count : 1;
    int dev = fake_capturing(st) ? 0 : fake_stream_dev(st);
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!fake_capturing(st))
        for (int d = 0; d < FAKEGPU_MAX_DEVICES; d++)
            if (x->alloc_bytes[d] && fake_graph_mem_reserve(d, x->alloc_bytes[d]) != 0)
                return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CUDA_SUCCESS;
    for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++)
        rc = fake_capturing(st) ? fake_capture_kernel(st, &ops[i]) : fake_submit(st, dev, &ops[i], NULL);
    if (fake_capturing(st))
        return rc;
    if (rc == CUDA_SUCCESS)
        fake_count_launch();
    fake_launch_cost(called);
    return rc;
}

WITH_PTSZ(cuGraphLaunch, graph_launch, (CUgraphExec hGraphExec, CUstream hStream), hGraphExec, hStream)
