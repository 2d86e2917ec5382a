/*
 * The generic node calls, the executor's side (cuGraphAddNode and _v2,
 * cuGraphNodeSetParams, cuGraphExecNodeSetParams; the guest's:
 * forwarder/remote/guest/cuda/graphs/generic.c): one message, whose union
 * of parameters is read by its node's type alone, into a union of the
 * executor's own (nothing else of the guest's reaches the driver), each
 * field checked as that type's own call checks it (nodes.c, memory.c): the
 * handles the guest's, a kernel's parameters the kernel's, a copy's and a
 * memset's memory and a free's address the guest's, an allocation's
 * access descriptors the message's.  Host, external semaphores', batched
 * memory operations' and conditional nodes are refused
 * (CUDA_ERROR_NOT_SUPPORTED).  A memset's parameters set with no context
 * (the guest's cuGraphMemsetNodeSetParams) are the node's own, set by
 * cuGraphMemsetNodeSetParams.
 */
#include "forwarder/remote/executor/cuda/graphs/graphs.h"

#include <string.h>

/* What a node's union names, as the driver takes it. */
struct node {
    CUgraphNodeParams p;
    void *ptrs[VGPU_EXEC_MAX_PARAMS];
    CUmemAccessDesc descs[VGPU_IN_cuGraphAddNode_v2_accessDescCount_MAX];
};

static bool known(const struct vgpu_exec *x, const void *h, bool nonnull)
{
    return (h || !nonnull) && vgpu_exec_handle_known(x, (uint64_t)(uintptr_t)h, false);
}

/* The node's parameters from the message's union, by its type: 0;
 * VGPU_EXEC_CLOSE (data its type has not), or the code to reply. */
static int union_of(struct vgpu_exec *x, const struct vgpu_in_cuGraphAddNode_v2 *in, const char *call, struct node *n)
{
    const CUgraphNodeParams *g = &in->nodeParams;
    CUgraphNodeParams *p = &n->p;
    if ((g->type != CU_GRAPH_NODE_TYPE_KERNEL && (in->count || in->params_size)) ||
        (g->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC && in->accessDescCount))
        return vgpu_exec_malformed(call, in->params_size);
    memset(p, 0, sizeof(*p));
    p->type = g->type;
    memcpy(p->reserved0, g->reserved0, sizeof(p->reserved0)); /* the driver's to refuse, as any caller's */
    p->reserved2 = g->reserved2;
    switch (g->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        const CUDA_KERNEL_NODE_PARAMS_v3 *k = &g->kernel;
        if (!known(x, k->func, false) || !known(x, k->kern, false) || !known(x, k->ctx, false))
            return CUDA_ERROR_INVALID_HANDLE;
        struct vgpu_exec_kernel_node fields = {
            .func = (uint64_t)(uintptr_t)k->func,
            .kern = (uint64_t)(uintptr_t)k->kern,
            .ctx = (uint64_t)(uintptr_t)k->ctx,
            .gridDimX = k->gridDimX,
            .gridDimY = k->gridDimY,
            .gridDimZ = k->gridDimZ,
            .blockDimX = k->blockDimX,
            .blockDimY = k->blockDimY,
            .blockDimZ = k->blockDimZ,
            .sharedMemBytes = k->sharedMemBytes,
            .count = in->count,
            .sizes = in->sizes,
            .params = in->params,
            .params_size = in->params_size,
        };
        CUDA_KERNEL_NODE_PARAMS made;
        int r = vgpu_exec_graph_kernel(x, &fields, call, n->ptrs, &made);
        if (r == 0)
            memcpy(&p->kernel, &made, sizeof(p->kernel)); /* v3's fields are v2's */
        return r;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        if (!known(x, g->memcpy.copyCtx, false))
            return CUDA_ERROR_INVALID_HANDLE;
        p->memcpy.flags = g->memcpy.flags;
        p->memcpy.reserved = g->memcpy.reserved;
        p->memcpy.copyCtx = g->memcpy.copyCtx;
        return vgpu_exec_graph_copy(x, &g->memcpy.copyParams, &p->memcpy.copyParams, call);
    case CU_GRAPH_NODE_TYPE_MEMSET:
        if (!known(x, g->memset.ctx, false))
            return CUDA_ERROR_INVALID_HANDLE;
        p->memset = g->memset;
        return vgpu_exec_graph_memset(x, g->memset.dst, g->memset.pitch, g->memset.elementSize, g->memset.width,
                                      g->memset.height, call)
                   ? 0
                   : CUDA_ERROR_INVALID_VALUE;
    case CU_GRAPH_NODE_TYPE_GRAPH:
        p->graph = g->graph;
        return known(x, g->graph.graph, true) ? 0 : CUDA_ERROR_INVALID_HANDLE;
    case CU_GRAPH_NODE_TYPE_EMPTY: return 0;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        p->eventWait = g->eventWait;
        return known(x, g->eventWait.event, true) ? 0 : CUDA_ERROR_INVALID_HANDLE;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        p->eventRecord = g->eventRecord;
        return known(x, g->eventRecord.event, true) ? 0 : CUDA_ERROR_INVALID_HANDLE;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        if (g->alloc.poolProps.win32SecurityAttributes)
            return CUDA_ERROR_NOT_SUPPORTED; /* a pointer of the guest's */
        if (in->accessDescCount)
            memcpy(n->descs, in->accessDescs, in->accessDescCount * sizeof(*n->descs));
        p->alloc = (CUDA_MEM_ALLOC_NODE_PARAMS_v2){
            .poolProps = g->alloc.poolProps,
            .accessDescs = in->accessDescCount ? n->descs : NULL,
            .accessDescCount = in->accessDescCount,
            .bytesize = g->alloc.bytesize,
        };
        return 0;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        p->free = g->free;
        return vgpu_exec_graph_allocation(g->free.dptr) || vgpu_exec_device_memory(x, g->free.dptr, call)
                   ? 0
                   : CUDA_ERROR_INVALID_VALUE;
    default: return CUDA_ERROR_NOT_SUPPORTED; /* a host function's, external semaphores', memory operations', ... */
    }
}

/* What the node the driver made (or was given) now holds: an allocation's
 * range, a copy's host sides (memory.c). */
static void made(const struct vgpu_in_cuGraphAddNode_v2 *in, const struct node *n, uint64_t node)
{
    if (n->p.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && n->p.alloc.dptr)
        vgpu_exec_graph_allocated(n->p.alloc.dptr, n->p.alloc.bytesize);
    if (n->p.type == CU_GRAPH_NODE_TYPE_MEMCPY)
        vgpu_exec_graph_copy_set(node, &in->nodeParams.memcpy.copyParams, &n->p.memcpy.copyParams);
}

static int add(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddNode_v2 *in, bool v2, const char *call)
{
    static __thread struct node n; /* each lane's thread's: 9 KiB not on its stack */
    if (in->hGraphExec || in->hNode)
        return vgpu_exec_malformed(call, 0);
    int r = union_of(x, in, call, &n);
    if (r == VGPU_EXEC_CLOSE)
        return r;
    if (r == 0 && !in->hGraph)
        r = CUDA_ERROR_INVALID_VALUE;
    /* The first form has no edge data: the guest's are the default edges, zeros. */
    static const CUgraphEdgeData zero;
    for (size_t i = 0; r == 0 && !v2 && i < in->numDependencies; i++)
        if (memcmp(&in->dependencyData[i], &zero, sizeof(zero)) != 0)
            r = CUDA_ERROR_INVALID_VALUE;
    struct vgpu_out_cuGraphAddNode_v2 out = { 0 };
    if (r == 0 && v2)
        r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, const CUgraphEdgeData *, size_t,
                          CUgraphNodeParams *))fn)(&out.phGraphNode, in->hGraph, in->dependencies, in->dependencyData,
                                                   in->numDependencies, &n.p);
    else if (r == 0)
        r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraphNodeParams *))fn)(
            &out.phGraphNode, in->hGraph, in->dependencies, in->numDependencies, &n.p);
    if (r == 0) {
        made(in, &n, (uint64_t)(uintptr_t)out.phGraphNode);
        out.dptr = n.p.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ? n.p.alloc.dptr : 0;
    }
    return vgpu_exec_reply_cuGraphAddNode_v2(x, r, in, &out);
}

int vgpu_exec_cuGraphAddNode_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddNode_v2 *in)
{
    return add(x, fn, in, true, "cuGraphAddNode_v2");
}

int vgpu_exec_cuGraphAddNode(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddNode_v2 *in)
{
    return add(x, fn, in, false, "cuGraphAddNode");
}

/* A node's parameters set (exec false), or an executable graph's copy of
 * them: the reply's node and address are zeros. */
static int set(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddNode_v2 *in, bool exec, const char *call)
{
    static __thread struct node n;
    if (in->hGraph || in->numDependencies || exec != (in->hGraphExec != 0))
        return vgpu_exec_malformed(call, 0);
    int r = union_of(x, in, call, &n);
    if (r == VGPU_EXEC_CLOSE)
        return r;
    if (r == 0 && !in->hNode)
        r = CUDA_ERROR_INVALID_VALUE;
    CUgraphNode node = (CUgraphNode)(uintptr_t)in->hNode;
    if (r == 0 && exec) {
        r = ((CUresult(*)(CUgraphExec, CUgraphNode, CUgraphNodeParams *))fn)((CUgraphExec)(uintptr_t)in->hGraphExec,
                                                                             node, &n.p);
    } else if (r == 0 && n.p.type == CU_GRAPH_NODE_TYPE_MEMSET && !n.p.memset.ctx) {
        /* The node's own context kept: the memset's own call. */
        void *own = vgpu_exec_function_named(x, "cuGraphMemsetNodeSetParams");
        const CUDA_MEMSET_NODE_PARAMS_v1 m = {
            .dst = n.p.memset.dst,
            .pitch = n.p.memset.pitch,
            .value = n.p.memset.value,
            .elementSize = n.p.memset.elementSize,
            .width = n.p.memset.width,
            .height = n.p.memset.height,
        };
        r = own ? ((CUresult(*)(CUgraphNode, const CUDA_MEMSET_NODE_PARAMS_v1 *))own)(node, &m)
                : CUDA_ERROR_NOT_SUPPORTED;
    } else if (r == 0) {
        r = ((CUresult(*)(CUgraphNode, CUgraphNodeParams *))fn)(node, &n.p);
    }
    if (r == 0 && !exec)
        made(in, &n, in->hNode);
    struct vgpu_out_cuGraphAddNode_v2 out = { 0 };
    return vgpu_exec_reply_cuGraphAddNode_v2(x, r, in, &out);
}

int vgpu_exec_cuGraphNodeSetParams(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddNode_v2 *in)
{
    return set(x, fn, in, false, "cuGraphNodeSetParams");
}

int vgpu_exec_cuGraphExecNodeSetParams(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddNode_v2 *in)
{
    return set(x, fn, in, true, "cuGraphExecNodeSetParams");
}
