/*
 * A graph's nodes built by hand, the executor's side of the calls that
 * need one (the guest's: forwarder/remote/guest/cuda/graphs/nodes.c; the
 * messages: forwarder/remote/spec/cuda.remote).  The graph, the
 * dependencies, the kernel, the context and the node are handles the
 * guest was given (the generated parse checks them); a kernel node's
 * parameters are exactly as many and as long as the driver says the
 * kernel's are (as a launch's: launch.c), and come back so; a copy's or a
 * memset's memory, and a free node's address, are the guest's (memory.c);
 * an attribute's value is plain data (as a launch's); a batch's operations
 * name the guest's memory alone (memory.c); an allocation node's
 * range becomes the guest's memory.  The node the driver makes becomes
 * the guest's handle (the generated reply registers it).
 */
#include "forwarder/remote/executor/cuda/graphs/graphs.h"
#include "forwarder/remote/spec/versions.h"

#include <stdlib.h>
#include <string.h>

int vgpu_exec_graph_kernel(struct vgpu_exec *x, const struct vgpu_exec_kernel_node *k, const char *call, void **ptrs,
                           CUDA_KERNEL_NODE_PARAMS *p)
{
    uint64_t f = k->func ? k->func : k->kern;
    if (!f)
        return CUDA_ERROR_INVALID_VALUE;
    int r = vgpu_exec_params_of(x, (CUfunction)(uintptr_t)f, k->count, k->sizes, k->params, k->params_size, call, ptrs);
    if (r != 0)
        return r;
    *p = (CUDA_KERNEL_NODE_PARAMS){
        .func = (CUfunction)(uintptr_t)k->func,
        .gridDimX = k->gridDimX,
        .gridDimY = k->gridDimY,
        .gridDimZ = k->gridDimZ,
        .blockDimX = k->blockDimX,
        .blockDimY = k->blockDimY,
        .blockDimZ = k->blockDimZ,
        .sharedMemBytes = k->sharedMemBytes,
        .kernelParams = ptrs,
        .kern = (CUkernel)(uintptr_t)k->kern,
        .ctx = (CUcontext)(uintptr_t)k->ctx,
    };
    return 0;
}

/* A v2 node's parameters as v1's: a library's kernel or a context has no
 * place there (*r: the call's argument is invalid). */
static CUDA_KERNEL_NODE_PARAMS_v1 to_v1(const CUDA_KERNEL_NODE_PARAMS *p, int *r)
{
    if (p->kern || p->ctx)
        *r = CUDA_ERROR_INVALID_VALUE;
    return (CUDA_KERNEL_NODE_PARAMS_v1){ VGPU_REMOTE_KERNEL_NODE_FIELDS(p) };
}

/* ---- kernel nodes ---- */

static int add_kernel(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddKernelNode_v2 *in, bool v1,
                      const char *call)
{
    void *ptrs[VGPU_EXEC_MAX_PARAMS];
    CUDA_KERNEL_NODE_PARAMS p;
    struct vgpu_exec_kernel_node k = VGPU_EXEC_KERNEL_NODE(in);
    int r = vgpu_exec_graph_kernel(x, &k, call, ptrs, &p);
    if (r == VGPU_EXEC_CLOSE)
        return r;
    struct vgpu_out_cuGraphAddKernelNode_v2 out = { 0 };
    if (r == 0 && v1) {
        CUDA_KERNEL_NODE_PARAMS_v1 p1 = to_v1(&p, &r);
        if (r == 0)
            r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                              const CUDA_KERNEL_NODE_PARAMS_v1 *))fn)(&out.phGraphNode, in->hGraph, in->dependencies,
                                                                      in->numDependencies, &p1);
    } else if (r == 0) {
        r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS *))fn)(
            &out.phGraphNode, in->hGraph, in->dependencies, in->numDependencies, &p);
    }
    return vgpu_exec_reply_cuGraphAddKernelNode_v2(x, r, in, &out);
}

int vgpu_exec_cuGraphAddKernelNode_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddKernelNode_v2 *in)
{
    return add_kernel(x, fn, in, false, "cuGraphAddKernelNode_v2");
}

int vgpu_exec_cuGraphAddKernelNode(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddKernelNode_v2 *in)
{
    return add_kernel(x, fn, in, true, "cuGraphAddKernelNode");
}

/* A node's parameters set (hGraphExec 0), or an executable graph's copy
 * of them (exec: the call takes one). */
static int set_kernel(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphExecKernelNodeSetParams_v2 *in,
                      bool exec, bool v1, const char *call)
{
    void *ptrs[VGPU_EXEC_MAX_PARAMS];
    CUDA_KERNEL_NODE_PARAMS p;
    struct vgpu_exec_kernel_node k = VGPU_EXEC_KERNEL_NODE(in);
    int r = vgpu_exec_graph_kernel(x, &k, call, ptrs, &p);
    if (r == VGPU_EXEC_CLOSE)
        return r;
    if (exec != (in->hGraphExec != NULL))
        return vgpu_exec_malformed(call, 0);
    CUDA_KERNEL_NODE_PARAMS_v1 p1 = to_v1(&p, v1 ? &r : &(int){ 0 });
    const void *given = v1 ? (const void *)&p1 : (const void *)&p;
    if (r == 0)
        r = exec ? ((CUresult(*)(CUgraphExec, CUgraphNode, const void *))fn)(in->hGraphExec, in->hNode, given)
                 : ((CUresult(*)(CUgraphNode, const void *))fn)(in->hNode, given);
    return vgpu_exec_reply(x, r, NULL, 0);
}

int vgpu_exec_cuGraphKernelNodeSetParams_v2(struct vgpu_exec *x, void *fn,
                                            const struct vgpu_in_cuGraphExecKernelNodeSetParams_v2 *in)
{
    return set_kernel(x, fn, in, false, false, "cuGraphKernelNodeSetParams_v2");
}

int vgpu_exec_cuGraphKernelNodeSetParams(struct vgpu_exec *x, void *fn,
                                         const struct vgpu_in_cuGraphExecKernelNodeSetParams_v2 *in)
{
    return set_kernel(x, fn, in, false, true, "cuGraphKernelNodeSetParams");
}

int vgpu_exec_cuGraphExecKernelNodeSetParams_v2(struct vgpu_exec *x, void *fn,
                                                const struct vgpu_in_cuGraphExecKernelNodeSetParams_v2 *in)
{
    return set_kernel(x, fn, in, true, false, "cuGraphExecKernelNodeSetParams_v2");
}

int vgpu_exec_cuGraphExecKernelNodeSetParams(struct vgpu_exec *x, void *fn,
                                             const struct vgpu_in_cuGraphExecKernelNodeSetParams_v2 *in)
{
    return set_kernel(x, fn, in, true, true, "cuGraphExecKernelNodeSetParams");
}

/* Where each of the driver's parameters of kernel f lies and how long it
 * is (cuFuncGetParamInfo, or cuKernelGetParamInfo for a library's
 * kernel): their count, or -1 (more than a launch carries, or one longer). */
static int layout(struct vgpu_exec *x, uint64_t f, bool kernel, size_t *offset, uint32_t *size)
{
    int (*info)(uint64_t, size_t, size_t *, size_t *) =
        (int (*)(uint64_t, size_t, size_t *, size_t *))vgpu_exec_function_named(x, kernel ? "cuKernelGetParamInfo"
                                                                                          : "cuFuncGetParamInfo");
    for (int i = 0; info && i < VGPU_EXEC_MAX_PARAMS; i++) {
        size_t bytes = 0;
        int r = info(f, (size_t)i, &offset[i], &bytes);
        if (r == CUDA_ERROR_INVALID_VALUE) /* past the last parameter */
            return i;
        if (r != 0 || bytes > 4096)
            return -1;
        size[i] = (uint32_t)bytes;
    }
    return -1;
}

/* extra's buffer (CU_LAUNCH_PARAM_BUFFER_POINTER, of
 * CU_LAUNCH_PARAM_BUFFER_SIZE bytes), as the driver gives a node made with
 * one; NULL where it has none. */
static const char *buffer_of(void **extra, size_t *size)
{
    const char *buffer = NULL;
    *size = 0;
    for (unsigned i = 0; extra && i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
            *size = *(const size_t *)extra[i + 1];
    }
    return buffer;
}

/* A node's parameters back: its kernel's parameters as a launch sends them
 * (their sizes, as the driver gives them, then their bytes, each padded to
 * 8), from its kernelParams or from the buffer in its extra. */
static int get_kernel(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphKernelNodeGetParams_v2 *in, bool v1)
{
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof(p));
    int r = v1 ? ((CUresult(*)(CUgraphNode, void *))fn)(in->hNode, &p) /* v1's fields are v2's first ones */
               : ((CUresult(*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *))fn)(in->hNode, &p);
    if (v1)
        p.kern = NULL, p.ctx = NULL;
    size_t offset[VGPU_EXEC_MAX_PARAMS];
    uint32_t size[VGPU_EXEC_MAX_PARAMS];
    uint64_t f = p.func ? (uint64_t)(uintptr_t)p.func : (uint64_t)(uintptr_t)p.kern;
    int n = r == 0 ? layout(x, f, !p.func, offset, size) : 0;
    size_t len = 0, room = 0;
    const char *buffer = r == 0 && !p.kernelParams ? buffer_of(p.extra, &room) : NULL;
    if (r == 0 && (n < 0 || (n && !p.kernelParams && !buffer)))
        r = CUDA_ERROR_NOT_SUPPORTED;
    for (int i = 0; r == 0 && i < n; i++) {
        len += (size[i] + 7) & ~7u;
        if (buffer && (offset[i] > room || size[i] > room - offset[i]))
            r = CUDA_ERROR_NOT_SUPPORTED;
    }
    /* At most 256 parameters of at most 4 KiB each: 1 MiB, zeroed (padding: nothing of the executor's goes back). */
    char *bytes = r == 0 ? calloc(1, len ? len : 1) : NULL;
    if (r == 0 && !bytes)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0, at = 0; r == 0 && i < n; at += (size[i] + 7) & ~7, i++)
        memcpy(bytes + at, buffer ? buffer + offset[i] : p.kernelParams[i], size[i]);
    struct vgpu_out_cuGraphKernelNodeGetParams_v2 out = {
        .func = (uint64_t)(uintptr_t)p.func,
        .kern = (uint64_t)(uintptr_t)p.kern,
        .ctx = (uint64_t)(uintptr_t)p.ctx,
        .gridDimX = p.gridDimX,
        .gridDimY = p.gridDimY,
        .gridDimZ = p.gridDimZ,
        .blockDimX = p.blockDimX,
        .blockDimY = p.blockDimY,
        .blockDimZ = p.blockDimZ,
        .sharedMemBytes = p.sharedMemBytes,
        .count = r == 0 ? (uint32_t)n : 0,
        .sizes = size,
        .params = bytes,
        .params_size = r == 0 ? len : 0,
    };
    int sent = vgpu_exec_reply_cuGraphKernelNodeGetParams_v2(x, r, in, &out);
    free(bytes);
    return sent;
}

int vgpu_exec_cuGraphKernelNodeGetParams_v2(struct vgpu_exec *x, void *fn,
                                            const struct vgpu_in_cuGraphKernelNodeGetParams_v2 *in)
{
    return get_kernel(x, fn, in, false);
}

int vgpu_exec_cuGraphKernelNodeGetParams(struct vgpu_exec *x, void *fn,
                                         const struct vgpu_in_cuGraphKernelNodeGetParams_v2 *in)
{
    return get_kernel(x, fn, in, true);
}

/* A value of plain data, as a launch's attribute (launch.c); one that names
 * memory, an event or a device node is refused (CUDA_ERROR_NOT_SUPPORTED). */
int vgpu_exec_cuGraphKernelNodeSetAttribute(struct vgpu_exec *x, void *fn,
                                            const struct vgpu_in_cuGraphKernelNodeSetAttribute *in)
{
    CUlaunchAttribute a = { .id = in->attr, .value = in->value };
    bool plain = vgpu_exec_attribute_ok(x, &a) && a.id != CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT &&
                 a.id != CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
    int r = plain ? ((CUresult(*)(CUgraphNode, CUkernelNodeAttrID, const CUkernelNodeAttrValue *))fn)(
                        in->hNode, in->attr, &a.value)
                  : CUDA_ERROR_NOT_SUPPORTED;
    return vgpu_exec_reply(x, r, NULL, 0);
}

/* ---- copy and memset nodes ---- */

int vgpu_exec_cuGraphAddMemcpyNode(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddMemcpyNode *in)
{
    CUDA_MEMCPY3D c;
    int r = vgpu_exec_graph_copy(x, &in->copyParams, &c, "cuGraphAddMemcpyNode");
    struct vgpu_out_cuGraphAddMemcpyNode out = { 0 };
    if (r == 0)
        r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_MEMCPY3D *, CUcontext))fn)(
            &out.phGraphNode, in->hGraph, in->dependencies, in->numDependencies, &c, in->ctx);
    if (r == 0)
        vgpu_exec_graph_copy_set((uint64_t)(uintptr_t)out.phGraphNode, &in->copyParams, &c);
    return vgpu_exec_reply_cuGraphAddMemcpyNode(x, r, in, &out);
}

/* A node's copy set (hGraphExec 0), or an executable graph's. */
static int set_copy(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphExecMemcpyNodeSetParams *in, bool exec,
                    const char *call)
{
    if (exec != (in->hGraphExec != NULL) || (!exec && in->ctx))
        return vgpu_exec_malformed(call, 0);
    CUDA_MEMCPY3D c;
    int r = vgpu_exec_graph_copy(x, &in->copyParams, &c, call);
    if (r == 0)
        r = exec ? ((CUresult(*)(CUgraphExec, CUgraphNode, const CUDA_MEMCPY3D *, CUcontext))fn)(in->hGraphExec,
                                                                                                 in->hNode, &c, in->ctx)
                 : ((CUresult(*)(CUgraphNode, const CUDA_MEMCPY3D *))fn)(in->hNode, &c);
    if (r == 0 && !exec)
        vgpu_exec_graph_copy_set((uint64_t)(uintptr_t)in->hNode, &in->copyParams, &c);
    return vgpu_exec_reply(x, r, NULL, 0);
}

int vgpu_exec_cuGraphMemcpyNodeSetParams(struct vgpu_exec *x, void *fn,
                                         const struct vgpu_in_cuGraphExecMemcpyNodeSetParams *in)
{
    return set_copy(x, fn, in, false, "cuGraphMemcpyNodeSetParams");
}

int vgpu_exec_cuGraphExecMemcpyNodeSetParams(struct vgpu_exec *x, void *fn,
                                             const struct vgpu_in_cuGraphExecMemcpyNodeSetParams *in)
{
    return set_copy(x, fn, in, true, "cuGraphExecMemcpyNodeSetParams");
}

/* A host side back as the guest's address (memory.c). */
int vgpu_exec_cuGraphMemcpyNodeGetParams(struct vgpu_exec *x, void *fn,
                                         const struct vgpu_in_cuGraphMemcpyNodeGetParams *in)
{
    struct vgpu_out_cuGraphMemcpyNodeGetParams out;
    memset(&out, 0, sizeof(out));
    int r = ((CUresult(*)(CUgraphNode, CUDA_MEMCPY3D *))fn)(in->hNode, &out.nodeParams);
    if (r == 0)
        vgpu_exec_graph_copy_got(x, (uint64_t)(uintptr_t)in->hNode, &out.nodeParams);
    return vgpu_exec_reply_cuGraphMemcpyNodeGetParams(x, r, in, &out);
}

int vgpu_exec_cuGraphAddMemsetNode(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddMemsetNode *in)
{
    const CUDA_MEMSET_NODE_PARAMS *m = &in->memsetParams;
    struct vgpu_out_cuGraphAddMemsetNode out = { 0 };
    int r = vgpu_exec_graph_memset(x, m->dst, m->pitch, m->elementSize, m->width, m->height, "cuGraphAddMemsetNode")
                ? 0
                : CUDA_ERROR_INVALID_VALUE;
    if (r == 0)
        r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_MEMSET_NODE_PARAMS *,
                          CUcontext))fn)(&out.phGraphNode, in->hGraph, in->dependencies, in->numDependencies, m,
                                         in->ctx);
    return vgpu_exec_reply_cuGraphAddMemsetNode(x, r, in, &out);
}

/* ---- allocation and free nodes ---- */

int vgpu_exec_cuGraphAddMemAllocNode(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddMemAllocNode *in)
{
    CUmemAccessDesc descs[VGPU_IN_cuGraphAddMemAllocNode_accessDescCount_MAX];
    if (in->accessDescCount)
        memcpy(descs, in->accessDescs, in->accessDescCount * sizeof(*descs));
    CUDA_MEM_ALLOC_NODE_PARAMS p = {
        .poolProps = in->poolProps,
        .accessDescs = in->accessDescCount ? descs : NULL,
        .accessDescCount = in->accessDescCount,
        .bytesize = in->bytesize,
    };
    struct vgpu_out_cuGraphAddMemAllocNode out = { 0 };
    /* Windows security attributes would be a pointer of the guest's: refused. */
    int r = p.poolProps.win32SecurityAttributes ? CUDA_ERROR_NOT_SUPPORTED : 0;
    if (r == 0)
        r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUDA_MEM_ALLOC_NODE_PARAMS *))fn)(
            &out.phGraphNode, in->hGraph, in->dependencies, in->numDependencies, &p);
    if (r == 0) {
        out.dptr = p.dptr;
        vgpu_exec_graph_allocated(p.dptr, p.bytesize);
    }
    return vgpu_exec_reply_cuGraphAddMemAllocNode(x, r, in, &out);
}

int vgpu_exec_cuGraphMemAllocNodeGetParams(struct vgpu_exec *x, void *fn,
                                           const struct vgpu_in_cuGraphMemAllocNodeGetParams *in)
{
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof(p));
    int r = ((CUresult(*)(CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS *))fn)(in->hNode, &p);
    if (r == 0 && (p.accessDescCount > VGPU_OUT_cuGraphMemAllocNodeGetParams_accessDescCount_MAX ||
                   (p.accessDescCount && !p.accessDescs)))
        r = CUDA_ERROR_NOT_SUPPORTED;
    p.poolProps.win32SecurityAttributes = NULL;
    struct vgpu_out_cuGraphMemAllocNodeGetParams out = {
        .poolProps = p.poolProps,
        .accessDescCount = r == 0 ? p.accessDescCount : 0,
        .accessDescs = (CUmemAccessDesc *)(uintptr_t)p.accessDescs,
        .bytesize = p.bytesize,
        .dptr = p.dptr,
    };
    return vgpu_exec_reply_cuGraphMemAllocNodeGetParams(x, r, in, &out);
}

/* An allocation node's range, or the guest's device memory. */
int vgpu_exec_cuGraphAddMemFreeNode(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddMemFreeNode *in)
{
    struct vgpu_out_cuGraphAddMemFreeNode out = { 0 };
    int r = vgpu_exec_graph_allocation(in->dptr) || vgpu_exec_device_memory(x, in->dptr, "cuGraphAddMemFreeNode")
                ? 0
                : CUDA_ERROR_INVALID_VALUE;
    if (r == 0)
        r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUdeviceptr))fn)(
            &out.phGraphNode, in->hGraph, in->dependencies, in->numDependencies, in->dptr);
    return vgpu_exec_reply_cuGraphAddMemFreeNode(x, r, in, &out);
}

/* ---- batches of memory operations ---- */

int vgpu_exec_cuGraphAddBatchMemOpNode(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphAddBatchMemOpNode *in)
{
    /* A copy: the driver may read the array after the request buffer is reused. */
    CUstreamBatchMemOpParams ops[VGPU_IN_cuGraphAddBatchMemOpNode_count_MAX];
    memcpy(ops, in->paramArray, in->count * sizeof(*ops));
    CUDA_BATCH_MEM_OP_NODE_PARAMS p = {
        .ctx = (CUcontext)(uintptr_t)in->ctx, .count = in->count, .paramArray = ops, .flags = in->flags
    };
    struct vgpu_out_cuGraphAddBatchMemOpNode out = { 0 };
    int r = vgpu_exec_graph_ops(x, ops, in->count, "cuGraphAddBatchMemOpNode") ? 0 : CUDA_ERROR_INVALID_VALUE;
    if (r == 0)
        r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                          const CUDA_BATCH_MEM_OP_NODE_PARAMS *))fn)(&out.phGraphNode, in->hGraph, in->dependencies,
                                                                     in->numDependencies, &p);
    return vgpu_exec_reply_cuGraphAddBatchMemOpNode(x, r, in, &out);
}

/* A node's operations set (hGraphExec 0), or an executable graph's. */
static int set_batch(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphExecBatchMemOpNodeSetParams *in,
                     bool exec, const char *call)
{
    if (exec != (in->hGraphExec != NULL))
        return vgpu_exec_malformed(call, 0);
    CUstreamBatchMemOpParams ops[VGPU_IN_cuGraphExecBatchMemOpNodeSetParams_count_MAX];
    memcpy(ops, in->paramArray, in->count * sizeof(*ops));
    CUDA_BATCH_MEM_OP_NODE_PARAMS p = {
        .ctx = (CUcontext)(uintptr_t)in->ctx, .count = in->count, .paramArray = ops, .flags = in->flags
    };
    int r = vgpu_exec_graph_ops(x, ops, in->count, call) ? 0 : CUDA_ERROR_INVALID_VALUE;
    if (r == 0)
        r = exec ? ((CUresult(*)(CUgraphExec, CUgraphNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS *))fn)(in->hGraphExec,
                                                                                                      in->hNode, &p)
                 : ((CUresult(*)(CUgraphNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS *))fn)(in->hNode, &p);
    return vgpu_exec_reply(x, r, NULL, 0);
}

int vgpu_exec_cuGraphBatchMemOpNodeSetParams(struct vgpu_exec *x, void *fn,
                                             const struct vgpu_in_cuGraphExecBatchMemOpNodeSetParams *in)
{
    return set_batch(x, fn, in, false, "cuGraphBatchMemOpNodeSetParams");
}

int vgpu_exec_cuGraphExecBatchMemOpNodeSetParams(struct vgpu_exec *x, void *fn,
                                                 const struct vgpu_in_cuGraphExecBatchMemOpNodeSetParams *in)
{
    return set_batch(x, fn, in, true, "cuGraphExecBatchMemOpNodeSetParams");
}

int vgpu_exec_cuGraphBatchMemOpNodeGetParams(struct vgpu_exec *x, void *fn,
                                             const struct vgpu_in_cuGraphBatchMemOpNodeGetParams *in)
{
    CUDA_BATCH_MEM_OP_NODE_PARAMS p;
    memset(&p, 0, sizeof(p));
    int r = ((CUresult(*)(CUgraphNode, CUDA_BATCH_MEM_OP_NODE_PARAMS *))fn)(in->hNode, &p);
    if (r == 0 && (p.count > VGPU_OUT_cuGraphBatchMemOpNodeGetParams_count_MAX || (p.count && !p.paramArray)))
        r = CUDA_ERROR_NOT_SUPPORTED;
    struct vgpu_out_cuGraphBatchMemOpNodeGetParams out = {
        .ctx = (uint64_t)(uintptr_t)p.ctx,
        .flags = p.flags,
        .count = r == 0 ? p.count : 0,
        .paramArray = p.paramArray,
    };
    return vgpu_exec_reply_cuGraphBatchMemOpNodeGetParams(x, r, in, &out);
}
