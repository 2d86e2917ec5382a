/*
 * The memory a graph's node may name, the executor's side: the guest's
 * device memory (vgpu_exec_device_rows), the ranges the driver gave the
 * guest's allocation nodes (which it may not yet have mapped when nodes
 * that name them are added), arrays it was given, and on a copy node's
 * host side a block of page-locked memory it shared, as captured copies
 * may name (copies/copy.c): the graph reads or writes it at each launch,
 * which only memory both sides keep mapped allows.  A copy node's host
 * sides are remembered by node, so that its parameters come back with the
 * guest's addresses, never the executor's.  An executor serves one guest:
 * these lists are its, for the executor's life.
 */
#include "forwarder/remote/executor/cuda/graphs/graphs.h"

#include <pthread.h>
#include <stdlib.h>

/* Owned by this file, under lists_lock (a guest's lanes are threads of one executor). */
struct range {
    struct range *next;
    uint64_t base, size;
};
static struct range *allocations;
struct copy_node {
    struct copy_node *next;
    uint64_t node;
    const void *guest_src, *exec_src;
    void *guest_dst, *exec_dst;
};
static struct copy_node *copy_nodes;
static pthread_mutex_t lists_lock = PTHREAD_MUTEX_INITIALIZER;

void vgpu_exec_graph_allocated(uint64_t dptr, uint64_t size)
{
    pthread_mutex_lock(&lists_lock);
    struct range *r = allocations;
    while (r && r->base != dptr)
        r = r->next;
    if (r)
        r->size = size > r->size ? size : r->size;
    else if ((r = malloc(sizeof(*r)))) {
        *r = (struct range){ allocations, dptr, size };
        allocations = r;
    }
    pthread_mutex_unlock(&lists_lock);
}

/* The allocation node's range holding [p, p + n): whether there is one
 * (n 0: p is one's start). */
static bool allocated(uint64_t p, uint64_t n)
{
    bool in = false;
    pthread_mutex_lock(&lists_lock);
    for (const struct range *r = allocations; r && !in; r = r->next)
        in = n ? p >= r->base && p - r->base < r->size && n <= r->size - (p - r->base) : p == r->base;
    pthread_mutex_unlock(&lists_lock);
    return in;
}

bool vgpu_exec_graph_allocation(uint64_t p)
{
    return p && allocated(p, 0);
}

bool vgpu_exec_graph_rows(struct vgpu_exec *x, uint64_t p, uint64_t pitch, uint64_t width, uint64_t size,
                          uint64_t height, const char *call)
{
    uint64_t bytes, span;
    if (!width || !height)
        return true;
    if (__builtin_mul_overflow(width, size, &bytes) || __builtin_mul_overflow(height - 1, pitch, &span) ||
        __builtin_add_overflow(span, bytes, &span))
        return false;
    return allocated(p, span) || vgpu_exec_device_rows(x, p, pitch, width, size, height, call);
}

bool vgpu_exec_graph_memset(struct vgpu_exec *x, CUdeviceptr dst, size_t pitch, unsigned element, size_t width,
                            size_t height, const char *call)
{
    if (element != 1 && element != 2 && element != 4)
        return false;
    return vgpu_exec_graph_rows(x, dst, height > 1 ? pitch : 0, width, element, height, call);
}

/* One side of a copy node: its rows and layers from (xb, y, z) of a side
 * pitch bytes a row and height rows a layer.  A device side's the guest's,
 * an array one it was given, a host side the guest's address of a shared
 * block (*host: where the executor has it).  0, or the code to reply. */
static int side(struct vgpu_exec *x, CUmemorytype type, size_t xb, size_t y, size_t z, size_t lod, const void **host,
                CUdeviceptr dev, CUarray array, size_t pitch, size_t height, const CUDA_MEMCPY3D *c, const char *call)
{
    if (lod)
        return CUDA_ERROR_NOT_SUPPORTED; /* mipmap levels: refused, as the copies refuse them */
    if (type == CU_MEMORYTYPE_ARRAY)
        return array && vgpu_exec_handle_known(x, (uint64_t)(uintptr_t)array, false) ? 0 : CUDA_ERROR_INVALID_HANDLE;
    if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_HOST)
        return CUDA_ERROR_INVALID_VALUE; /* a unified address is resolved by the guest */
    size_t depth = c->Depth ? c->Depth : 1;
    uint64_t first, rows, start, end = 0;
    if (!c->WidthInBytes || !c->Height) { /* nothing copied: a host side still lies in a shared block */
        void *at = type == CU_MEMORYTYPE_HOST ? vgpu_exec_shared_at(x, (uint64_t)(uintptr_t)*host, 0) : NULL;
        if (at)
            *host = at;
        return type == CU_MEMORYTYPE_HOST && !at ? CUDA_ERROR_INVALID_VALUE : 0;
    }
    if (__builtin_mul_overflow(z, height, &first) || __builtin_add_overflow(first, y, &first) ||
        __builtin_mul_overflow(depth - 1, height, &rows) || __builtin_add_overflow(rows, c->Height, &rows) ||
        __builtin_mul_overflow(first, pitch, &start) || __builtin_add_overflow(start, xb, &start))
        return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_MEMORYTYPE_DEVICE)
        return start + dev >= dev && vgpu_exec_graph_rows(x, dev + start, pitch, c->WidthInBytes, 1, rows, call)
                   ? 0
                   : CUDA_ERROR_INVALID_VALUE;
    /* The guest's memory: from the side's start to its last row's end, all in one shared block. */
    if (__builtin_mul_overflow(rows - 1, pitch, &end) || __builtin_add_overflow(end, start, &end) ||
        __builtin_add_overflow(end, c->WidthInBytes, &end))
        return CUDA_ERROR_INVALID_VALUE;
    void *at = vgpu_exec_shared_at(x, (uint64_t)(uintptr_t)*host, end);
    if (!at)
        return CUDA_ERROR_INVALID_VALUE;
    *host = at;
    return 0;
}

int vgpu_exec_graph_copy(struct vgpu_exec *x, const CUDA_MEMCPY3D *given, CUDA_MEMCPY3D *c, const char *call)
{
    const CUDA_MEMCPY3D *g = given;
    *c = (CUDA_MEMCPY3D){
        .srcXInBytes = g->srcXInBytes,
        .srcY = g->srcY,
        .srcZ = g->srcZ,
        .srcMemoryType = g->srcMemoryType,
        .srcPitch = g->srcPitch,
        .srcHeight = g->srcHeight,
        .dstXInBytes = g->dstXInBytes,
        .dstY = g->dstY,
        .dstZ = g->dstZ,
        .dstMemoryType = g->dstMemoryType,
        .dstPitch = g->dstPitch,
        .dstHeight = g->dstHeight,
        .WidthInBytes = g->WidthInBytes,
        .Height = g->Height,
        .Depth = g->Depth,
    };
    /* Each side's own field, by its type; the others stay NULL. */
    if (g->srcMemoryType == CU_MEMORYTYPE_HOST)
        c->srcHost = g->srcHost;
    else if (g->srcMemoryType == CU_MEMORYTYPE_ARRAY)
        c->srcArray = g->srcArray;
    else
        c->srcDevice = g->srcDevice;
    if (g->dstMemoryType == CU_MEMORYTYPE_HOST)
        c->dstHost = g->dstHost;
    else if (g->dstMemoryType == CU_MEMORYTYPE_ARRAY)
        c->dstArray = g->dstArray;
    else
        c->dstDevice = g->dstDevice;
    int r = side(x, g->srcMemoryType, g->srcXInBytes, g->srcY, g->srcZ, g->srcLOD, &c->srcHost, g->srcDevice,
                 g->srcArray, g->srcPitch, g->srcHeight, g, call);
    const void *dst = c->dstHost;
    if (r == 0)
        r = side(x, g->dstMemoryType, g->dstXInBytes, g->dstY, g->dstZ, g->dstLOD, &dst, g->dstDevice, g->dstArray,
                 g->dstPitch, g->dstHeight, g, call);
    c->dstHost = (void *)(uintptr_t)dst;
    return r;
}

void vgpu_exec_graph_copy_set(uint64_t node, const CUDA_MEMCPY3D *given, const CUDA_MEMCPY3D *c)
{
    bool any = c->srcMemoryType == CU_MEMORYTYPE_HOST || c->dstMemoryType == CU_MEMORYTYPE_HOST;
    pthread_mutex_lock(&lists_lock);
    struct copy_node **at = &copy_nodes;
    while (*at && (*at)->node != node)
        at = &(*at)->next;
    struct copy_node *n = *at;
    if (!n && any && (n = calloc(1, sizeof(*n)))) {
        n->node = node;
        n->next = copy_nodes;
        copy_nodes = n;
    } else if (n && !any) {
        *at = n->next;
        free(n);
        n = NULL;
    }
    if (n) {
        n->guest_src = given->srcHost;
        n->exec_src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? c->srcHost : NULL;
        n->guest_dst = given->dstHost;
        n->exec_dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? c->dstHost : NULL;
    }
    pthread_mutex_unlock(&lists_lock);
}

/* A host side as the guest sees it: the guest's address the executor gave
 * the driver for the node, or a shared block's address that is the same
 * on both sides (in the window); else NULL. */
static const void *guest_side(struct vgpu_exec *x, const void *p, const void *exec, const void *guest)
{
    if (p && p == exec)
        return guest;
    return p && vgpu_exec_shared_at(x, (uint64_t)(uintptr_t)p, 1) == p ? p : NULL;
}

void vgpu_exec_graph_copy_got(struct vgpu_exec *x, uint64_t node, CUDA_MEMCPY3D *c)
{
    pthread_mutex_lock(&lists_lock);
    const struct copy_node *n = copy_nodes;
    while (n && n->node != node)
        n = n->next;
    struct copy_node none = { 0 }, known = n ? *n : none;
    pthread_mutex_unlock(&lists_lock);
    if (c->srcMemoryType == CU_MEMORYTYPE_HOST)
        c->srcHost = guest_side(x, c->srcHost, known.exec_src, known.guest_src);
    else
        c->srcHost = NULL;
    if (c->dstMemoryType == CU_MEMORYTYPE_HOST)
        c->dstHost = (void *)(uintptr_t)guest_side(x, c->dstHost, known.exec_dst, known.guest_dst);
    else
        c->dstHost = NULL;
    c->reserved0 = c->reserved1 = NULL;
}

bool vgpu_exec_graph_ops(struct vgpu_exec *x, const CUstreamBatchMemOpParams *ops, unsigned n, const char *call)
{
    for (unsigned i = 0; i < n; i++) {
        const CUstreamBatchMemOpParams *op = &ops[i];
        bool wide = op->operation == CU_STREAM_MEM_OP_WAIT_VALUE_64 || op->operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
        switch (op->operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            if (!vgpu_exec_graph_rows(x, op->waitValue.address, 0, 1, wide ? 8 : 4, 1, call) ||
                (op->waitValue.alias && !vgpu_exec_device_memory(x, op->waitValue.alias, call)))
                return false;
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            if (!vgpu_exec_graph_rows(x, op->writeValue.address, 0, 1, wide ? 8 : 4, 1, call) ||
                (op->writeValue.alias && !vgpu_exec_device_memory(x, op->writeValue.alias, call)))
                return false;
            break;
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        case CU_STREAM_MEM_OP_BARRIER: break;
        default: return false;
        }
    }
    return true;
}
