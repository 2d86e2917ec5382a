/*
 * Stream-ordered allocation and memory pools.
 *
 * A pool's reserved memory = used (live blocks) + cached (freed blocks it
 * keeps). Both are charged to the device. A freed block's bytes stay cached
 * until cuMemPoolTrimTo or a synchronisation trims the pool down to its
 * release threshold; new allocations reuse cached bytes first.  A pool
 * keeps its attributes as they were set (its reuse policies are hints the
 * fake's allocations need not follow) and which devices may access it.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdlib.h>
#include <sys/mman.h>

#define POOL_MAGIC 0x4c4f4f50u /* "POOL" */

struct CUmemPoolHandle_st {
    unsigned magic;
    int alive;
    int is_default;
    int dev;
    unsigned long long threshold;
    unsigned long long used, cached;
    unsigned long long used_high, reserved_high;
    int reuse[3]; /* the reuse policies, CU_MEMPOOL_ATTR_REUSE_* - 1: 1 (allowed) until set */
    CUmemAccess_flags access[FAKEGPU_MAX_DEVICES]; /* other devices' access (cuMemPoolSetAccess) */
    struct CUmemPoolHandle_st *next;
};

/* Owned by this file, under fake_lock: each device's default pool, the
 * pool its stream-ordered allocations come from, and the created pools. */
static struct CUmemPoolHandle_st g_default_pools[FAKEGPU_MAX_DEVICES];
static struct CUmemPoolHandle_st *g_device_pool[FAKEGPU_MAX_DEVICES]; /* NULL = default */
static struct CUmemPoolHandle_st *g_pools;                            /* created ones */

/* A pool's state when made: reuse allowed every way, no other device's access. */
static void pool_init(struct CUmemPoolHandle_st *p, int dev, int is_default)
{
    p->magic = POOL_MAGIC;
    p->alive = 1;
    p->is_default = is_default;
    p->dev = dev;
    for (int i = 0; i < 3; i++)
        p->reuse[i] = 1;
}

static struct CUmemPoolHandle_st *default_pool_locked(int dev)
{
    struct CUmemPoolHandle_st *p = &g_default_pools[dev];
    if (p->magic != POOL_MAGIC)
        pool_init(p, dev, 1);
    return p;
}

static int pool_valid(struct CUmemPoolHandle_st *p)
{
    return p && p->magic == POOL_MAGIC && p->alive;
}

/* Called with fake_lock held. */
static void pool_trim_locked(struct CUmemPoolHandle_st *p, unsigned long long keep)
{
    unsigned long long reserved = p->used + p->cached;
    if (reserved <= keep || p->cached == 0)
        return;
    unsigned long long release = reserved - keep;
    if (release > p->cached)
        release = p->cached;
    p->cached -= release;
    fake_uncharge(p->dev, release);
}

void fake_trim_pools(int dev)
{
    LOCK();
    for (int d = 0; d < FAKEGPU_MAX_DEVICES; d++)
        if ((dev < 0 || d == dev) && g_default_pools[d].magic == POOL_MAGIC)
            pool_trim_locked(&g_default_pools[d], g_default_pools[d].threshold);
    for (struct CUmemPoolHandle_st *p = g_pools; p; p = p->next)
        if (p->alive && (dev < 0 || p->dev == dev))
            pool_trim_locked(p, p->threshold);
    UNLOCK();
}

void fake_pool_return_block(struct alloc *a)
{
    struct CUmemPoolHandle_st *p = a->pool;
    LOCK();
    p->used -= a->size < p->used ? a->size : p->used;
    if (p->alive)
        p->cached += a->size;
    else
        fake_uncharge(p->dev, a->size);
    UNLOCK();
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t size, struct CUmemPoolHandle_st *p)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    if (!pool_valid(p)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned long long reuse = p->cached < size ? p->cached : size;
    if (fake_charge(p->dev, size - reuse) != 0) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    p->cached -= reuse;
    p->used += size;
    if (p->used > p->used_high)
        p->used_high = p->used;
    if (p->used + p->cached > p->reserved_high)
        p->reserved_high = p->used + p->cached;
    UNLOCK();

    void *mem = fake_map_bytes(size, PROT_READ | PROT_WRITE, 0);
    if (!mem || !fake_track(mem, size, p->dev, A_POOL, p, NULL)) {
        if (mem)
            munmap(mem, size);
        LOCK();
        p->used -= size;
        p->cached += reuse;
        UNLOCK();
        fake_uncharge(p->dev, size - reuse);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr)(uintptr_t)mem;
    return CUDA_SUCCESS;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, CUstream s)
{
    int dev = fake_stream_device(s);
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    LOCK();
    struct CUmemPoolHandle_st *p = g_device_pool[dev] ? g_device_pool[dev] : default_pool_locked(dev);
    UNLOCK();
    return pool_alloc(dptr, size, p);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    ENTER();
    return alloc_async(dptr, bytesize, hStream);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    ENTER();
    return alloc_async(dptr, bytesize, hStream);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    ENTER();
    (void)hStream;
    return pool_alloc(dptr, bytesize, pool);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    ENTER();
    (void)hStream;
    return pool_alloc(dptr, bytesize, pool);
}

/* After what the stream queued: no kernel of it may still use the block. */
static CUresult free_async(int ptsz, CUdeviceptr dptr, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? fake_mem_free(dptr) : rc;
}

WITH_PTSZ(cuMemFreeAsync, free_async, (CUdeviceptr dptr, CUstream hStream), dptr, hStream)

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    ENTER();
    if (!pool || !poolProps || poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(poolProps->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pool_init(p, poolProps->location.id, 0);
    LOCK();
    p->next = g_pools;
    g_pools = p;
    UNLOCK();
    *pool = p;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    ENTER();
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    if (!pool_valid(pool) || pool->is_default) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        pool_trim_locked(pool, 0);
        pool->alive = 0; /* stays allocated: live blocks still point at it */
        for (int d = 0; d < FAKEGPU_MAX_DEVICES; d++)
            if (g_device_pool[d] == pool)
                g_device_pool[d] = NULL;
    }
    UNLOCK();
    return rc;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    ENTER();
    LOCK();
    CUresult rc = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        pool_trim_locked(pool, minBytesToKeep);
    UNLOCK();
    return rc;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    ENTER();
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    *pool_out = default_pool_locked(dev);
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    ENTER();
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    *pool = g_device_pool[dev] ? g_device_pool[dev] : default_pool_locked(dev);
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    ENTER();
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        switch (attr) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: pool->threshold = *(cuuint64_t *)value; break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH: pool->used_high = pool->used; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: pool->reserved_high = pool->used + pool->cached; break;
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
            pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(int *)value != 0;
            break;
        default: rc = CUDA_ERROR_INVALID_VALUE; break;
        }
    }
    UNLOCK();
    return rc;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    ENTER();
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    /* What a pool holds now is not a capture's to say: on the H100 (r580) a
     * capture of a cuMemAllocAsync broke when vgpu read the pool's
     * reserve around it, and held without those reads. */
    if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT || attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT) {
        CUresult unsafe = fake_capture_unsafe_call();
        if (unsafe != CUDA_SUCCESS)
            return unsafe;
    }
    LOCK();
    CUresult rc = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        switch (attr) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = pool->threshold; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = pool->used + pool->cached; break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = pool->used; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = pool->reserved_high; break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = pool->used_high; break;
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
            *(int *)value = pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
            break;
        default: rc = CUDA_ERROR_INVALID_VALUE; break;
        }
    }
    UNLOCK();
    return rc;
}

/* Which devices may access the pool's memory: its own device always reads
 * and writes it (a descriptor asking less of it is CUDA_ERROR_INVALID_VALUE,
 * as the driver's); another device reads and writes it, or not at all (a
 * pool has no read-only access), from when it is set. */
CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    ENTER();
    if (!map && count)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
        if (!fake_valid_device(map[i].location.id))
            return CUDA_ERROR_INVALID_DEVICE;
    }
    LOCK();
    CUresult rc = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; rc == CUDA_SUCCESS && i < count; i++)
        if (map[i].location.id == pool->dev && map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            rc = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; rc == CUDA_SUCCESS && i < count; i++)
        if (map[i].location.id != pool->dev)
            pool->access[map[i].location.id] = map[i].flags;
    UNLOCK();
    return rc;
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location)
{
    ENTER();
    if (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(location->id))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    CUresult rc = pool_valid(memPool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        *flags = location->id == memPool->dev ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : memPool->access[location->id];
    UNLOCK();
    return rc;
}
