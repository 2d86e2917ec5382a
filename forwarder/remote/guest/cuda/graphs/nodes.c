/*
 * A graph's nodes built by hand, the guest's side of the calls that need
 * one (forwarder/remote/executor/cuda/graphs/nodes.c is the other; the
 * messages: forwarder/remote/spec/cuda.remote): kernel nodes, whose
 * parameters are packed as a launch's (launch.c) and come back kept here
 * (kept.c); copy nodes, whose sides of the guest's memory must lie in a
 * block shared with the executor; allocation nodes; edges with their
 * data; and batches of memory operations, whose arrays come back kept.
 * Empty, event, child-graph, memset and free nodes are generated whole.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/graphs/graphs.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "common/log.h"

#include "vgpu_cuda_slots.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

/* ---- kernel nodes ---- */

/* The kernel a node's parameters name: func, or kern (a library's) where
 * func is NULL. */
static CUfunction kernel_of(const CUDA_KERNEL_NODE_PARAMS *p)
{
    return p->func ? p->func : (CUfunction)(void *)p->kern;
}

/* A v1 node's parameters as v2's: no library's kernel, no context. */
static CUDA_KERNEL_NODE_PARAMS from_v1(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    return (CUDA_KERNEL_NODE_PARAMS){ VGPU_REMOTE_KERNEL_NODE_FIELDS(p), .extra = p->extra };
}

/* The fields of a message that carries a kernel node's parameters
 * (designated initializers), its packed parameters in pk. */
#define KERNEL_FIELDS(p, pk)                                                                                           \
    .func = (uint64_t)(uintptr_t)(p)->func, .kern = (uint64_t)(uintptr_t)(p)->kern,                                    \
    .ctx = (uint64_t)(uintptr_t)(p)->ctx, .gridDimX = (p)->gridDimX, .gridDimY = (p)->gridDimY,                        \
    .gridDimZ = (p)->gridDimZ, .blockDimX = (p)->blockDimX, .blockDimY = (p)->blockDimY, .blockDimZ = (p)->blockDimZ,  \
    .sharedMemBytes = (p)->sharedMemBytes, .count = (pk).count, .sizes = (pk).sizes, .params = (pk).bytes,             \
    .params_size = (pk).len

static CUresult add_kernel(unsigned slot, CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t ndeps,
                           const CUDA_KERNEL_NODE_PARAMS *p)
{
    if (!node || !p || !kernel_of(p))
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_remote_params pk;
    CUresult r = vgpu_remote_pack_params(kernel_of(p), p->kernelParams, p->extra, &pk);
    if (r != CUDA_SUCCESS)
        return r;
    struct vgpu_in_cuGraphAddKernelNode_v2 in = {
        .hGraph = graph, .numDependencies = ndeps, .dependencies = deps, KERNEL_FIELDS(p, pk)
    };
    struct vgpu_out_cuGraphAddKernelNode_v2 out = { 0 };
    r = (CUresult)vgpu_remote_call_cuGraphAddKernelNode_v2(slot, 0, &in, &out);
    free(pk.bytes);
    if (r == CUDA_SUCCESS)
        *node = out.phGraphNode;
    return r;
}

CUresult vgpu_remote_guest_cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                                   size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p)
{
    return add_kernel(SLOT(cuGraphAddKernelNode_v2), node, graph, deps, ndeps, p);
}

CUresult vgpu_remote_guest_cuGraphAddKernelNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t ndeps,
                                                const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS v2 = from_v1(p);
    return add_kernel(SLOT(cuGraphAddKernelNode), node, graph, deps, ndeps, &v2);
}

/* A node's parameters set (exec NULL), or an executable graph's copy of them. */
static CUresult set_kernel(unsigned slot, CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p)
{
    if (!p || !kernel_of(p))
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_remote_params pk;
    CUresult r = vgpu_remote_pack_params(kernel_of(p), p->kernelParams, p->extra, &pk);
    if (r != CUDA_SUCCESS)
        return r;
    struct vgpu_in_cuGraphExecKernelNodeSetParams_v2 in = { .hGraphExec = exec, .hNode = node, KERNEL_FIELDS(p, pk) };
    r = (CUresult)vgpu_remote_call_cuGraphExecKernelNodeSetParams_v2(slot, 0, &in, NULL);
    free(pk.bytes);
    return r;
}

CUresult vgpu_remote_guest_cuGraphKernelNodeSetParams_v2(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p)
{
    return set_kernel(SLOT(cuGraphKernelNodeSetParams_v2), NULL, node, p);
}

CUresult vgpu_remote_guest_cuGraphKernelNodeSetParams(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS v2 = from_v1(p);
    return set_kernel(SLOT(cuGraphKernelNodeSetParams), NULL, node, &v2);
}

CUresult vgpu_remote_guest_cuGraphExecKernelNodeSetParams_v2(CUgraphExec exec, CUgraphNode node,
                                                             const CUDA_KERNEL_NODE_PARAMS *p)
{
    return set_kernel(SLOT(cuGraphExecKernelNodeSetParams_v2), exec, node, p);
}

CUresult vgpu_remote_guest_cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                          const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS v2 = from_v1(p);
    return set_kernel(SLOT(cuGraphExecKernelNodeSetParams), exec, node, &v2);
}

/* The most a kernel node's parameters come back as: their sizes, then
 * their bytes (each at most 4 KiB, as a launch's). */
#define GOT_MAX                                                                                                        \
    (8 * VGPU_OUT_cuGraphKernelNodeGetParams_v2_count_MAX + VGPU_OUT_cuGraphKernelNodeGetParams_v2_count_MAX * 4096)

/* A node's parameters, its kernelParams an array of pointers into the
 * bytes kept for the node (kept.c), extra NULL, whatever form they were
 * given in. */
static CUresult get_kernel(unsigned slot, CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char *tail = malloc(GOT_MAX);
    if (!tail)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct vgpu_in_cuGraphKernelNodeGetParams_v2 in = { .hNode = node };
    struct vgpu_out_cuGraphKernelNodeGetParams_v2 out = { .tail = tail, .tail_size = GOT_MAX };
    CUresult r = (CUresult)vgpu_remote_call_cuGraphKernelNodeGetParams_v2(slot, 0, &in, &out);
    /* The sizes (padded to 8) and the bytes lie together in the tail: they are what is kept. */
    size_t sizes = ((size_t)out.count * 4 + 7) & ~(size_t)7, total = 0;
    for (unsigned i = 0; r == CUDA_SUCCESS && i < out.count; i++)
        total += (out.sizes[i] > 4096 ? (size_t)1 << 30 : ((size_t)out.sizes[i] + 7) & ~(size_t)7);
    if (r == CUDA_SUCCESS && (total != out.params_size || (out.count && (unsigned char *)out.params != tail + sizes)))
        r = CUDA_ERROR_UNKNOWN; /* not what the executor sends */
    void **params = NULL;
    if (r == CUDA_SUCCESS && out.count) {
        params = vgpu_remote_graph_keep(node, out.count * sizeof(void *), tail, sizes + total);
        if (!params)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        for (unsigned i = 0, at = 0; params && i < out.count; at += (out.sizes[i] + 7) & ~7u, i++)
            params[i] = (char *)params + out.count * sizeof(void *) + sizes + at;
    }
    if (r == CUDA_SUCCESS)
        *p = (CUDA_KERNEL_NODE_PARAMS){
            .func = (CUfunction)(uintptr_t)out.func,
            .gridDimX = out.gridDimX,
            .gridDimY = out.gridDimY,
            .gridDimZ = out.gridDimZ,
            .blockDimX = out.blockDimX,
            .blockDimY = out.blockDimY,
            .blockDimZ = out.blockDimZ,
            .sharedMemBytes = out.sharedMemBytes,
            .kernelParams = params,
            .extra = NULL,
            .kern = (CUkernel)(uintptr_t)out.kern,
            .ctx = (CUcontext)(uintptr_t)out.ctx,
        };
    free(tail);
    return r;
}

CUresult vgpu_remote_guest_cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *p)
{
    return get_kernel(SLOT(cuGraphKernelNodeGetParams_v2), node, p);
}

CUresult vgpu_remote_guest_cuGraphKernelNodeGetParams(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS v2;
    CUresult r = get_kernel(SLOT(cuGraphKernelNodeGetParams), node, &v2);
    if (r == CUDA_SUCCESS)
        *p = (CUDA_KERNEL_NODE_PARAMS_v1){ VGPU_REMOTE_KERNEL_NODE_FIELDS(&v2), .extra = NULL };
    return r;
}

/* ---- copy nodes ---- */

/* Said once: a copy node's side of the guest's memory outside the blocks
 * it shares with the executor. */
static atomic_bool said_unshared;

/* One side of a copy node as it crosses: a unified address resolved (the
 * guest's page-locked memory is the host's side, any other address the
 * device's), the guest's memory only in a block shared with the executor,
 * over the rows and layers the copy reads or writes (from the side's
 * start: x, y and z within them).  0, or the code to return. */
static CUresult side(CUmemorytype *type, const void **host, CUdeviceptr *dev, size_t x, size_t y, size_t z,
                     size_t pitch, size_t height, const CUDA_MEMCPY3D *c)
{
    if (*type == CU_MEMORYTYPE_UNIFIED) {
        void *base;
        size_t size;
        bool mapped;
        if (vgpu_remote_host_block((const void *)(uintptr_t)*dev, &base, &size, &mapped)) {
            *type = CU_MEMORYTYPE_HOST;
            *host = (const void *)(uintptr_t)*dev;
            *dev = 0;
        } else {
            *type = CU_MEMORYTYPE_DEVICE;
        }
    }
    if (*type != CU_MEMORYTYPE_HOST || !c->WidthInBytes || !c->Height)
        return CUDA_SUCCESS;
    size_t depth = c->Depth ? c->Depth : 1, rows, end;
    if (__builtin_mul_overflow(z + depth - 1, height, &rows) ||
        __builtin_add_overflow(rows, y + c->Height - 1, &rows) || __builtin_mul_overflow(rows, pitch, &end) ||
        __builtin_add_overflow(end, x + c->WidthInBytes, &end))
        return CUDA_ERROR_INVALID_VALUE;
    if (*host && vgpu_remote_host_shared(*host, end))
        return CUDA_SUCCESS;
    if (!atomic_exchange(&said_unshared, true))
        vgpu_warn("remote GPU: a graph's copy node names host memory that is not page-locked memory shared with the "
                  "executor, which the graph could not reach at its launches: refused (and any more such, unsaid)");
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult vgpu_remote_graph_copy(const CUDA_MEMCPY3D *given, CUDA_MEMCPY3D *c)
{
    if (!given)
        return CUDA_ERROR_INVALID_VALUE;
    *c = *given;
    CUresult r = side(&c->srcMemoryType, &c->srcHost, &c->srcDevice, c->srcXInBytes, c->srcY, c->srcZ, c->srcPitch,
                      c->srcHeight, c);
    if (r == CUDA_SUCCESS)
        r = side(&c->dstMemoryType, (const void **)&c->dstHost, &c->dstDevice, c->dstXInBytes, c->dstY, c->dstZ,
                 c->dstPitch, c->dstHeight, c);
    return r;
}

CUresult vgpu_remote_guest_cuGraphAddMemcpyNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t ndeps,
                                                const CUDA_MEMCPY3D *given, CUcontext ctx)
{
    if (!node)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuGraphAddMemcpyNode in = {
        .hGraph = graph, .numDependencies = ndeps, .dependencies = deps, .ctx = ctx
    };
    CUresult r = vgpu_remote_graph_copy(given, &in.copyParams);
    if (r != CUDA_SUCCESS)
        return r;
    struct vgpu_out_cuGraphAddMemcpyNode out = { 0 };
    r = (CUresult)vgpu_remote_call_cuGraphAddMemcpyNode(SLOT(cuGraphAddMemcpyNode), 0, &in, &out);
    if (r == CUDA_SUCCESS)
        *node = out.phGraphNode;
    return r;
}

static CUresult set_copy(unsigned slot, CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D *given, CUcontext ctx)
{
    struct vgpu_in_cuGraphExecMemcpyNodeSetParams in = { .hGraphExec = exec, .hNode = node, .ctx = ctx };
    CUresult r = vgpu_remote_graph_copy(given, &in.copyParams);
    return r == CUDA_SUCCESS ? (CUresult)vgpu_remote_call_cuGraphExecMemcpyNodeSetParams(slot, 0, &in, NULL) : r;
}

CUresult vgpu_remote_guest_cuGraphMemcpyNodeSetParams(CUgraphNode node, const CUDA_MEMCPY3D *given)
{
    return set_copy(SLOT(cuGraphMemcpyNodeSetParams), NULL, node, given, NULL);
}

CUresult vgpu_remote_guest_cuGraphExecMemcpyNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                          const CUDA_MEMCPY3D *given, CUcontext ctx)
{
    return set_copy(SLOT(cuGraphExecMemcpyNodeSetParams), exec, node, given, ctx);
}

/* ---- allocation nodes ---- */

CUresult vgpu_remote_guest_cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                                  size_t ndeps, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    if (!node || !p || (p->accessDescCount && !p->accessDescs))
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuGraphAddMemAllocNode in = {
        .hGraph = graph,
        .numDependencies = ndeps,
        .dependencies = deps,
        .poolProps = p->poolProps,
        .accessDescCount = p->accessDescCount,
        .accessDescs = p->accessDescs,
        .bytesize = p->bytesize,
    };
    struct vgpu_out_cuGraphAddMemAllocNode out = { 0 };
    CUresult r = (CUresult)vgpu_remote_call_cuGraphAddMemAllocNode(SLOT(cuGraphAddMemAllocNode), 0, &in, &out);
    if (r == CUDA_SUCCESS) {
        *node = out.phGraphNode;
        p->dptr = out.dptr;
    }
    return r;
}

/* The most an allocation node's parameters come back as, past its pool's properties. */
#define ALLOC_TAIL (12 * VGPU_OUT_cuGraphMemAllocNodeGetParams_accessDescCount_MAX + 8 + 16)

/* Its access descriptors are kept for the node (kept.c). */
CUresult vgpu_remote_guest_cuGraphMemAllocNodeGetParams(CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    _Alignas(8) unsigned char tail[ALLOC_TAIL];
    struct vgpu_in_cuGraphMemAllocNodeGetParams in = { .hNode = node };
    struct vgpu_out_cuGraphMemAllocNodeGetParams out = { .tail = tail, .tail_size = sizeof(tail) };
    CUresult r =
        (CUresult)vgpu_remote_call_cuGraphMemAllocNodeGetParams(SLOT(cuGraphMemAllocNodeGetParams), 0, &in, &out);
    const CUmemAccessDesc *descs = NULL;
    if (r == CUDA_SUCCESS && out.accessDescCount) {
        descs = vgpu_remote_graph_keep(node, 0, out.accessDescs, out.accessDescCount * sizeof(CUmemAccessDesc));
        if (!descs)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS)
        *p = (CUDA_MEM_ALLOC_NODE_PARAMS){
            .poolProps = out.poolProps,
            .accessDescs = descs,
            .accessDescCount = out.accessDescCount,
            .bytesize = out.bytesize,
            .dptr = out.dptr,
        };
    return r;
}

/* ---- edges ---- */

/* Every edge's data crosses: zeros (the default edges) where none is given. */
static CUresult edges(unsigned slot, CUgraph graph, const CUgraphNode *from, const CUgraphNode *to,
                      const CUgraphEdgeData *data, size_t n)
{
    CUgraphEdgeData *zeros = NULL;
    if (!data && n) {
        if (n > VGPU_IN_cuGraphAddDependencies_v2_numDependencies_MAX)
            return vgpu_remote_refuse(slot);
        if (!(zeros = calloc(n, sizeof(*zeros))))
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct vgpu_in_cuGraphAddDependencies_v2 in = {
        .hGraph = graph, .numDependencies = n, .from = from, .to = to, .edgeData = data ? data : zeros
    };
    CUresult r = (CUresult)vgpu_remote_call_cuGraphAddDependencies_v2(slot, 0, &in, NULL);
    free(zeros);
    return r;
}

CUresult vgpu_remote_guest_cuGraphAddDependencies_v2(CUgraph graph, const CUgraphNode *from, const CUgraphNode *to,
                                                     const CUgraphEdgeData *data, size_t n)
{
    return edges(SLOT(cuGraphAddDependencies_v2), graph, from, to, data, n);
}

CUresult vgpu_remote_guest_cuGraphRemoveDependencies_v2(CUgraph graph, const CUgraphNode *from, const CUgraphNode *to,
                                                        const CUgraphEdgeData *data, size_t n)
{
    return edges(SLOT(cuGraphRemoveDependencies_v2), graph, from, to, data, n);
}

/* ---- batches of memory operations ---- */

CUresult vgpu_remote_guest_cuGraphAddBatchMemOpNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                                    size_t ndeps, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    if (!node || !p)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuGraphAddBatchMemOpNode in = {
        .hGraph = graph,
        .numDependencies = ndeps,
        .dependencies = deps,
        .ctx = (uint64_t)(uintptr_t)p->ctx,
        .flags = p->flags,
        .count = p->count,
        .paramArray = p->paramArray,
    };
    struct vgpu_out_cuGraphAddBatchMemOpNode out = { 0 };
    CUresult r = (CUresult)vgpu_remote_call_cuGraphAddBatchMemOpNode(SLOT(cuGraphAddBatchMemOpNode), 0, &in, &out);
    if (r == CUDA_SUCCESS)
        *node = out.phGraphNode;
    return r;
}

static CUresult set_batch(unsigned slot, CUgraphExec exec, CUgraphNode node, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuGraphExecBatchMemOpNodeSetParams in = {
        .hGraphExec = exec,
        .hNode = node,
        .ctx = (uint64_t)(uintptr_t)p->ctx,
        .flags = p->flags,
        .count = p->count,
        .paramArray = p->paramArray,
    };
    return (CUresult)vgpu_remote_call_cuGraphExecBatchMemOpNodeSetParams(slot, 0, &in, NULL);
}

CUresult vgpu_remote_guest_cuGraphBatchMemOpNodeSetParams(CUgraphNode node, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    return set_batch(SLOT(cuGraphBatchMemOpNodeSetParams), NULL, node, p);
}

CUresult vgpu_remote_guest_cuGraphExecBatchMemOpNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                              const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    return set_batch(SLOT(cuGraphExecBatchMemOpNodeSetParams), exec, node, p);
}

/* The operations are kept for the node (kept.c). */
CUresult vgpu_remote_guest_cuGraphBatchMemOpNodeGetParams(CUgraphNode node, CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    enum { MAX = VGPU_OUT_cuGraphBatchMemOpNodeGetParams_count_MAX };
    CUstreamBatchMemOpParams *tail = malloc(MAX * sizeof(*tail));
    if (!tail)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct vgpu_in_cuGraphBatchMemOpNodeGetParams in = { .hNode = node };
    struct vgpu_out_cuGraphBatchMemOpNodeGetParams out = { .tail = tail, .tail_size = MAX * sizeof(*tail) };
    CUresult r =
        (CUresult)vgpu_remote_call_cuGraphBatchMemOpNodeGetParams(SLOT(cuGraphBatchMemOpNodeGetParams), 0, &in, &out);
    CUstreamBatchMemOpParams *ops = NULL;
    if (r == CUDA_SUCCESS && out.count &&
        !(ops = vgpu_remote_graph_keep(node, 0, out.paramArray, out.count * sizeof(*ops))))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        *p = (CUDA_BATCH_MEM_OP_NODE_PARAMS){
            .ctx = (CUcontext)(uintptr_t)out.ctx, .count = out.count, .paramArray = ops, .flags = out.flags
        };
    free(tail);
    return r;
}
