/*
 * Memory hooks: every call that takes or returns device memory asks the
 * backend first (vgpu_backend_mem_claim), then calls the driver, then tells
 * the backend what happened.  The legacy 32-bit ABIs and the _ptsz variants
 * share one body with their modern twin.
 */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_cuda_slots.h"

#include <cuda.h>
#include <limits.h>

/* c->pool is the caller's (NULL unless set). */
static CUresult claim(struct vgpu_mem_claim *c, enum vgpu_mem_kind kind, int device, size_t bytes)
{
    c->kind = kind;
    c->device = device;
    c->bytes = bytes;
    return vgpu_backend_mem_claim(c);
}

static unsigned int clamp32(size_t v)
{
    return v > UINT_MAX ? UINT_MAX : (unsigned int)v;
}

/* ---- what is left ---- */

VGPU_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    CUresult r = free_bytes && total ? vgpu_backend_mem_info(free_bytes, total) : CUDA_ERROR_INVALID_VALUE;
    vgpu_trace("cuMemGetInfo_v2", r, "-> free=%zu total=%zu", r ? 0 : *free_bytes, r ? 0 : *total);
    return r;
}

VGPU_EXPORT CUresult cuMemGetInfo(unsigned int *free_bytes, unsigned int *total)
{
    size_t f = 0, t = 0;
    CUresult r = free_bytes && total ? vgpu_backend_mem_info(&f, &t) : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        *free_bytes = clamp32(f);
        *total = clamp32(t);
    }
    vgpu_trace("cuMemGetInfo", r, "-> free=%zu total=%zu", f, t);
    return r;
}

/* ---- linear memory ---- */

VGPU_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    struct vgpu_mem_claim c = { 0 };
    CUresult r = claim(&c, VGPU_MEM_LINEAR, -1, bytesize);
    if (r == CUDA_SUCCESS) {
        r = VGPU_REAL_CUDA(cuMemAlloc_v2)(dptr, bytesize);
        vgpu_backend_mem_settle(&c, r, r == CUDA_SUCCESS ? (uintptr_t)*dptr : 0);
    }
    vgpu_trace("cuMemAlloc_v2", r, "%zu -> 0x%llx", bytesize, r ? 0ull : (unsigned long long)*dptr);
    return r;
}

VGPU_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    struct vgpu_mem_claim c = { 0 };
    CUresult r = claim(&c, VGPU_MEM_LINEAR, -1, bytesize);
    if (r == CUDA_SUCCESS) {
        r = VGPU_REAL_CUDA(cuMemAlloc)(dptr, bytesize);
        vgpu_backend_mem_settle(&c, r, r == CUDA_SUCCESS ? (uintptr_t)*dptr : 0);
    }
    vgpu_trace("cuMemAlloc", r, "%u -> 0x%x", bytesize, r ? 0u : *dptr);
    return r;
}

VGPU_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    /* The driver pads each row; claim the unpadded size now and let the
     * settle step take what the pitch says was really taken, or refuse. */
    struct vgpu_mem_claim c = { 0 };
    CUresult r = claim(&c, VGPU_MEM_LINEAR, -1, WidthInBytes * Height);
    if (r == CUDA_SUCCESS) {
        r = VGPU_REAL_CUDA(cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
        if (r == CUDA_SUCCESS)
            c.bytes = *pPitch * Height;
        if (vgpu_backend_mem_settle(&c, r, r == CUDA_SUCCESS ? (uintptr_t)*dptr : 0) != r) {
            VGPU_REAL_CUDA(cuMemFree_v2)(*dptr); /* the padded rows do not fit */
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    vgpu_trace("cuMemAllocPitch_v2", r, "%zu x %zu, %u -> 0x%llx pitch %zu", WidthInBytes, Height, ElementSizeBytes,
               r ? 0ull : (unsigned long long)*dptr, r ? 0 : *pPitch);
    return r;
}

VGPU_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes, unsigned int Height,
                         unsigned int ElementSizeBytes)
{
    struct vgpu_mem_claim c = { 0 };
    CUresult r = claim(&c, VGPU_MEM_LINEAR, -1, (size_t)WidthInBytes * Height);
    if (r == CUDA_SUCCESS) {
        r = VGPU_REAL_CUDA(cuMemAllocPitch)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
        if (r == CUDA_SUCCESS)
            c.bytes = (size_t)*pPitch * Height;
        if (vgpu_backend_mem_settle(&c, r, r == CUDA_SUCCESS ? (uintptr_t)*dptr : 0) != r) {
            VGPU_REAL_CUDA(cuMemFree)(*dptr); /* the padded rows do not fit */
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    vgpu_trace("cuMemAllocPitch", r, "%u x %u, %u -> 0x%x", WidthInBytes, Height, ElementSizeBytes, r ? 0u : *dptr);
    return r;
}

VGPU_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    struct vgpu_mem_claim c = { 0 };
    CUresult r = claim(&c, VGPU_MEM_MANAGED, -1, bytesize);
    if (r == CUDA_SUCCESS) {
        r = VGPU_REAL_CUDA(cuMemAllocManaged)(dptr, bytesize, flags);
        vgpu_backend_mem_settle(&c, r, r == CUDA_SUCCESS ? (uintptr_t)*dptr : 0);
    }
    vgpu_trace("cuMemAllocManaged", r, "%zu, 0x%x -> 0x%llx", bytesize, flags, r ? 0ull : (unsigned long long)*dptr);
    return r;
}

VGPU_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    struct vgpu_mem_free f;
    vgpu_backend_mem_free_begin(&f, VGPU_MEM_LINEAR, (uintptr_t)dptr);
    CUresult r = VGPU_REAL_CUDA(cuMemFree_v2)(dptr);
    vgpu_backend_mem_free_end(&f, r);
    vgpu_trace("cuMemFree_v2", r, "0x%llx", (unsigned long long)dptr);
    return r;
}

VGPU_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    struct vgpu_mem_free f;
    vgpu_backend_mem_free_begin(&f, VGPU_MEM_LINEAR, (uintptr_t)dptr);
    CUresult r = VGPU_REAL_CUDA(cuMemFree)(dptr);
    vgpu_backend_mem_free_end(&f, r);
    vgpu_trace("cuMemFree", r, "0x%x", dptr);
    return r;
}

/* ---- stream-ordered memory ---- */

typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);

/* A stream-ordered allocation on a capturing stream is a memory node of the
 * graph being captured: it is counted when the graph is instantiated and
 * launched (graph_mem.c), and reading the pool around it would break the
 * capture. */
static CUresult alloc_in_capture(const char *name, CUresult r, CUdeviceptr *dptr, size_t bytesize, CUstream s)
{
    vgpu_trace(name, r, "%zu, stream=%p (capturing) -> 0x%llx", bytesize, (void *)s,
               r ? 0ull : (unsigned long long)*dptr);
    return r;
}

static CUresult alloc_async(const char *name, bool ptsz, alloc_async_fn real, CUdeviceptr *dptr, size_t bytesize,
                            CUstream s)
{
    if (vgpu_backend_stream_captured(s, ptsz))
        return alloc_in_capture(name, real(dptr, bytesize, s), dptr, bytesize, s);
    struct vgpu_mem_claim c = { 0 };
    CUresult r = claim(&c, VGPU_MEM_ASYNC, -1, bytesize);
    if (r == CUDA_SUCCESS) {
        r = real(dptr, bytesize, s);
        vgpu_backend_mem_settle(&c, r, r == CUDA_SUCCESS ? (uintptr_t)*dptr : 0);
    }
    vgpu_trace(name, r, "%zu, stream=%p -> 0x%llx", bytesize, (void *)s, r ? 0ull : (unsigned long long)*dptr);
    return r;
}

static CUresult alloc_from_pool(const char *name, bool ptsz, alloc_pool_fn real, CUdeviceptr *dptr, size_t bytesize,
                                CUmemoryPool pool, CUstream s)
{
    if (vgpu_backend_stream_captured(s, ptsz))
        return alloc_in_capture(name, real(dptr, bytesize, pool, s), dptr, bytesize, s);
    struct vgpu_mem_claim c = { .pool = pool };
    CUresult r = claim(&c, VGPU_MEM_ASYNC, -1, bytesize);
    if (r == CUDA_SUCCESS) {
        r = real(dptr, bytesize, pool, s);
        vgpu_backend_mem_settle(&c, r, r == CUDA_SUCCESS ? (uintptr_t)*dptr : 0);
    }
    vgpu_trace(name, r, "%zu, pool=%p, stream=%p -> 0x%llx", bytesize, (void *)pool, (void *)s,
               r ? 0ull : (unsigned long long)*dptr);
    return r;
}

/* A freed stream-ordered block stays in its pool's reserve, which is what
 * is counted (vgpu_backend_pool_changed), so a free changes nothing. */
static CUresult free_async(const char *name, free_async_fn real, CUdeviceptr dptr, CUstream s)
{
    CUresult r = real(dptr, s);
    vgpu_trace(name, r, "0x%llx, stream=%p", (unsigned long long)dptr, (void *)s);
    return r;
}

VGPU_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async("cuMemAllocAsync", false, VGPU_REAL_CUDA(cuMemAllocAsync), dptr, bytesize, hStream);
}

VGPU_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async("cuMemAllocAsync_ptsz", true, VGPU_REAL_CUDA(cuMemAllocAsync_ptsz), dptr, bytesize, hStream);
}

VGPU_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    return alloc_from_pool("cuMemAllocFromPoolAsync", false, VGPU_REAL_CUDA(cuMemAllocFromPoolAsync), dptr, bytesize,
                           pool, hStream);
}

VGPU_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    return alloc_from_pool("cuMemAllocFromPoolAsync_ptsz", true, VGPU_REAL_CUDA(cuMemAllocFromPoolAsync_ptsz), dptr,
                           bytesize, pool, hStream);
}

VGPU_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return free_async("cuMemFreeAsync", VGPU_REAL_CUDA(cuMemFreeAsync), dptr, hStream);
}

VGPU_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return free_async("cuMemFreeAsync_ptsz", VGPU_REAL_CUDA(cuMemFreeAsync_ptsz), dptr, hStream);
}

/* ---- virtual memory management (PyTorch expandable segments, NCCL) ---- */

VGPU_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
    struct vgpu_mem_claim c = { .vdev = -1 };
    /* Memory on a device is counted on that device; host memory (a host or
     * NUMA location) is not device memory and is not counted. */
    int dev = prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
    CUresult r = dev < 0 ? CUDA_SUCCESS : claim(&c, VGPU_MEM_PHYSICAL, dev, size);
    if (r == CUDA_SUCCESS) {
        r = VGPU_REAL_CUDA(cuMemCreate)(handle, size, prop, flags);
        vgpu_backend_mem_settle(&c, r, r == CUDA_SUCCESS ? (uintptr_t)*handle : 0);
    }
    vgpu_trace("cuMemCreate", r, "%zu, device %d -> 0x%llx", size, dev, r ? 0ull : (unsigned long long)*handle);
    return r;
}

VGPU_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    struct vgpu_mem_free f;
    vgpu_backend_mem_free_begin(&f, VGPU_MEM_PHYSICAL, (uintptr_t)handle);
    CUresult r = VGPU_REAL_CUDA(cuMemRelease)(handle);
    vgpu_backend_mem_free_end(&f, r);
    vgpu_trace("cuMemRelease", r, "0x%llx", (unsigned long long)handle);
    return r;
}

/* ---- pools: a trim or destroy returns reserve to the device ---- */

VGPU_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    CUresult r = VGPU_REAL_CUDA(cuMemPoolTrimTo)(pool, minBytesToKeep);
    if (r == CUDA_SUCCESS)
        vgpu_backend_pool_changed(pool, false);
    vgpu_trace("cuMemPoolTrimTo", r, "%p, %zu", (void *)pool, minBytesToKeep);
    return r;
}

VGPU_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult r = VGPU_REAL_CUDA(cuMemPoolDestroy)(pool);
    if (r == CUDA_SUCCESS)
        vgpu_backend_pool_changed(pool, true);
    vgpu_trace("cuMemPoolDestroy", r, "%p", (void *)pool);
    return r;
}
