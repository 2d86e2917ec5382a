/*
 * Executable graphs: what a graph does, copied when it is instantiated
 * (each form), replayed by each launch on its stream: the kernels stream
 * capture recorded, then its nodes in an order their edges allow (a child
 * graph's in its place), each a step: a kernel queued with its arguments,
 * a memset, a copy or a batch of memory operations done on the host once
 * the stream's work before it is done (as the fake's asynchronous memsets
 * and copies are), an event recorded or waited for.  A graph with no work takes one kernel's time
 * (FAKEGPU_KERNEL_NS).  A step's parameters may be set in the executable
 * graph alone (cuGraphExec*NodeSetParams), and its steps made again from
 * a graph of the same shape (cuGraphExecUpdate).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/graphs/graphs.h"

#include <stdlib.h>
#include <string.h>

#define GEXEC_MAGIC 0x43584547u /* "GEXC" */

/* One node's work, as the executable graph holds it. */
struct step {
    CUgraphNode node; /* of the graph instantiated (a child graph's own nodes: theirs) */
    CUgraphNodeType type;
    struct fake_node params;
};

struct CUgraphExec_st {
    unsigned magic;
    int alive;
    unsigned long long flags;
    struct kernel_list kernels; /* captured: copied at instantiation */
    struct step *steps;         /* nodes: copied at instantiation */
    size_t nsteps;
    unsigned long long alloc_bytes[FAKEGPU_MAX_DEVICES]; /* its allocation nodes, per device */
};

/* The steps of graph g's nodes, in order, appended to x's (a child
 * graph's nodes in its node's place): 0, or the code to return. */
static CUresult steps_of(struct CUgraphExec_st *x, const struct CUgraph_st *g, int depth)
{
    if (depth > 8)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNode *order = fake_graph_order(g);
    if (!order)
        return CUDA_ERROR_INVALID_VALUE; /* a cycle (or no memory) */
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < g->nnodes && r == CUDA_SUCCESS; i++) {
        CUgraphNode n = order[i];
        if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
            x->alloc_bytes[n->dev] += n->bytes;
        if (n->type == CU_GRAPH_NODE_TYPE_GRAPH && n->params && n->params->child) {
            r = steps_of(x, n->params->child, depth + 1);
            continue;
        }
        struct step *grown = realloc(x->steps, (x->nsteps + 1) * sizeof(*grown));
        if (!grown) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        x->steps = grown;
        struct step *s = &x->steps[x->nsteps++];
        *s = (struct step){ .node = n, .type = n->type };
        if (n->params)
            s->params = *n->params;
    }
    free(order);
    return r;
}

/* Each step's kernel arguments point into the step's own copy of them. */
static void own_args(struct CUgraphExec_st *x)
{
    for (size_t i = 0; i < x->nsteps; i++)
        for (unsigned a = 0; a < FAKE_MAX_ARGS; a++)
            x->steps[i].params.arg_ptrs[a] = &x->steps[i].params.args[a];
}

static CUresult instantiate(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    if (!phGraphExec)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hGraph || !fake_object_live(&hGraph->magic, &hGraph->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < hGraph->kernels.count && r == CUDA_SUCCESS; i++)
        if (fake_kernels_append(&x->kernels, &hGraph->kernels.ops[i]) != 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        r = steps_of(x, hGraph, 0);
    if (r != CUDA_SUCCESS) {
        free(x->kernels.ops);
        free(x->steps);
        free(x);
        return r;
    }
    own_args(x);
    x->flags = flags;
    x->magic = GEXEC_MAGIC;
    x->alive = 1;
    *phGraphExec = x;
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    ENTER();
    return instantiate(phGraphExec, hGraph, flags);
}

/* The CUDA 10 and 11 forms, with an error node and a log the fake never fills. */
static CUresult instantiate_logged(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
                                   size_t bufferSize)
{
    (void)phErrorNode, (void)logBuffer, (void)bufferSize;
    return instantiate(phGraphExec, hGraph, 0);
}

TWO_NAMES(cuGraphInstantiate_v2, cuGraphInstantiate, instantiate_logged,
          (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize),
          phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize)

static int exec_live(CUgraphExec x)
{
    return x && fake_object_live(&x->magic, &x->alive, GEXEC_MAGIC);
}

static CUresult upload(int ptsz, CUgraphExec x, CUstream s)
{
    return exec_live(x) && fake_stream_of(s, ptsz) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

WITH_PTSZ(cuGraphUpload, upload, (CUgraphExec hGraphExec, CUstream hStream), hGraphExec, hStream)

/* CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD: uploaded to the stream given (nothing to do but check it). */
static CUresult instantiate_with_params(int ptsz, CUgraphExec *phGraphExec, CUgraph hGraph,
                                        CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    if (!params)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = instantiate(phGraphExec, hGraph, params->flags);
    if (rc == CUDA_SUCCESS && (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))
        rc = upload(ptsz, *phGraphExec, params->hUploadStream);
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

CUresult fake_exec_set(CUgraphExec x, CUgraphNode node, const struct fake_node *n)
{
    if (!exec_live(x))
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < x->nsteps; i++)
        if (x->steps[i].node == node) {
            struct fake_node *p = &x->steps[i].params;
            if (node->type == CU_GRAPH_NODE_TYPE_KERNEL) {
                p->kernel = n->kernel;
                memcpy(p->args, n->args, sizeof(p->args));
            } else if (node->type == CU_GRAPH_NODE_TYPE_MEMSET) {
                p->memset = n->memset;
            } else if (node->type == CU_GRAPH_NODE_TYPE_MEMCPY) {
                p->copy = n->copy;
            } else if (node->type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP) {
                memcpy(p->ops, n->ops, sizeof(p->ops));
                p->nops = n->nops;
                p->op_flags = n->op_flags;
            } else {
                return CUDA_ERROR_NOT_SUPPORTED;
            }
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_VALUE; /* not a node of the graph it was made from */
}

/* The update's steps made again from hGraph, when its nodes are of the
 * same types in the same order as the executable graph's (else the first
 * that differs is the error node). */
static CUresult update(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    *info = (CUgraphExecUpdateResultInfo){ .result = CU_GRAPH_EXEC_UPDATE_ERROR };
    if (!exec_live(x) || !g || !fake_object_live(&g->magic, &g->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUgraphExec_st fresh = { 0 };
    CUresult r = steps_of(&fresh, g, 0);
    if (r == CUDA_SUCCESS && fresh.nsteps != x->nsteps) {
        info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    for (size_t i = 0; r == CUDA_SUCCESS && i < x->nsteps; i++)
        if (fresh.steps[i].type != x->steps[i].type) {
            info->result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
            info->errorNode = fresh.steps[i].node;
            r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
        }
    if (r == CUDA_SUCCESS) {
        free(x->steps);
        x->steps = fresh.steps;
        memcpy(x->alloc_bytes, fresh.alloc_bytes, sizeof(x->alloc_bytes));
        own_args(x);
        info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    } else {
        free(fresh.steps);
    }
    return r;
}

CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo)
{
    ENTER();
    if (!resultInfo)
        return CUDA_ERROR_INVALID_VALUE;
    return update(hGraphExec, hGraph, resultInfo);
}

CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
                           CUgraphExecUpdateResult *updateResult_out)
{
    ENTER();
    if (!hErrorNode_out || !updateResult_out)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphExecUpdateResultInfo info;
    CUresult r = update(hGraphExec, hGraph, &info);
    *hErrorNode_out = info.errorNode;
    *updateResult_out = info.result;
    return r;
}

/* ---- a launch ---- */

/* A kernel step's operation: its arguments checked as a launch's are. */
static CUresult kernel_op(const struct fake_node *p, struct fake_op *op)
{
    const struct CUfunc_st *k =
        fake_kernel_of(p->kernel.func ? (const void *)p->kernel.func : (const void *)p->kernel.kern);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    *op = (struct fake_op){ .run = k->run };
    memcpy(op->args, p->args, sizeof(op->args));
    CUresult rc = k->check ? k->check(op->args) : CUDA_SUCCESS;
    op->ns = k->timed ? op->args[0] : fakegpu_config()->kernel_ns;
    return rc;
}

/* A memset step: its rows, element by element. */
static CUresult memset_rows(const CUDA_MEMSET_NODE_PARAMS *m)
{
    size_t row = m->width * m->elementSize;
    if (row && m->height && !fake_range_ok(m->dst, (m->height - 1) * m->pitch + row))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (size_t y = 0; y < m->height; y++) {
        char *p = (char *)(uintptr_t)(m->dst + y * m->pitch);
        for (size_t i = 0; i < m->width; i++)
            memcpy(p + i * m->elementSize, &m->value, m->elementSize); /* little-endian: the value's low bytes */
    }
    return CUDA_SUCCESS;
}

/* One step on stream s (st), capturing or not. */
static CUresult run_step(int ptsz, CUstream s, struct CUstream_st *st, int dev, const struct step *step)
{
    const struct fake_node *p = &step->params;
    struct fake_op op;
    CUresult rc = CUDA_SUCCESS;
    switch (step->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        rc = kernel_op(p, &op);
        if (rc == CUDA_SUCCESS)
            rc = fake_capturing(st) ? fake_capture_kernel(st, &op) : fake_submit(st, dev, &op, NULL);
        return rc;
    case CU_GRAPH_NODE_TYPE_MEMSET:
    case CU_GRAPH_NODE_TYPE_MEMCPY:
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        rc = fake_stream_before_host_op(s, ptsz); /* refused while capturing: the fake captures kernels only */
        if (rc == CUDA_SUCCESS && step->type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP)
            fake_mem_ops_run(p);
        else if (rc == CUDA_SUCCESS)
            rc = step->type == CU_GRAPH_NODE_TYPE_MEMSET ? memset_rows(&p->memset) : fake_copy_3d(&p->copy);
        return rc;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return ptsz ? cuEventRecord_ptsz(p->event, s) : cuEventRecord(p->event, s);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        return ptsz ? cuStreamWaitEvent_ptsz(s, p->event, 0) : cuStreamWaitEvent(s, p->event, 0);
    default: return CUDA_SUCCESS; /* empty, allocation (its reserve: below), free: no work of their own */
    }
}

/* One launch call (one launch cost) replays the graph; a graph with no
 * work takes one kernel's time. */
static CUresult graph_launch(int ptsz, CUgraphExec x, CUstream s)
{
    unsigned long long called = fake_now_ns();
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    if (!exec_live(x) || !st)
        return CUDA_ERROR_INVALID_HANDLE;
    int dev = fake_capturing(st) ? 0 : fake_stream_dev(st);
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!fake_capturing(st))
        for (int d = 0; d < FAKEGPU_MAX_DEVICES; d++)
            if (x->alloc_bytes[d] && fake_graph_mem_reserve(d, x->alloc_bytes[d]) != 0)
                return CUDA_ERROR_OUT_OF_MEMORY;
    const struct fake_op empty = { .ns = fakegpu_config()->kernel_ns };
    const struct fake_op *ops = x->kernels.count || x->nsteps ? x->kernels.ops : &empty;
    size_t count = x->kernels.count || x->nsteps ? x->kernels.count : 1;
    CUresult rc = CUDA_SUCCESS;
    for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++)
        rc = fake_capturing(st) ? fake_capture_kernel(st, &ops[i]) : fake_submit(st, dev, &ops[i], NULL);
    for (size_t i = 0; i < x->nsteps && rc == CUDA_SUCCESS; i++)
        rc = run_step(ptsz, s, st, dev, &x->steps[i]);
    if (fake_capturing(st))
        return rc;
    if (rc == CUDA_SUCCESS)
        fake_count_launch();
    fake_launch_cost(called);
    return rc;
}

WITH_PTSZ(cuGraphLaunch, graph_launch, (CUgraphExec hGraphExec, CUstream hStream), hGraphExec, hStream)
