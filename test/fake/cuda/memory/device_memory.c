/*
 * Device memory: cuMemAlloc* (legacy 32-bit ones below 4 GiB), pitched and
 * managed allocations, their frees (a context's go with it), and
 * cuMemGetInfo.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Freed device mappings of up to 64 MiB, kept for an allocation of the same
 * size: a real driver hands freed addresses out again, and an alloc+free
 * benchmark then measures the driver's bookkeeping, not mmap.  Guarded by
 * fake_lock.
 */
#define SPARE_MAPPINGS 32
#define SPARE_MAX_BYTES (64u << 20)
static struct {
    void *p;
    size_t size;
} g_spare[SPARE_MAPPINGS];
static int g_nspare;

static void *spare_take(size_t size, int low32)
{
    void *p = NULL;
    LOCK();
    for (int i = 0; i < g_nspare && !p; i++)
        if (g_spare[i].size == size && (!low32 || (uintptr_t)g_spare[i].p + size <= 0xffffffffu)) {
            p = g_spare[i].p;
            g_spare[i] = g_spare[--g_nspare];
        }
    UNLOCK();
    return p;
}

static void unmap_or_keep(void *p, size_t size)
{
    LOCK();
    int kept = size <= SPARE_MAX_BYTES && g_nspare < SPARE_MAPPINGS;
    if (kept)
        g_spare[g_nspare++] = (__typeof__(g_spare[0])){ p, size };
    UNLOCK();
    if (!kept)
        munmap(p, size);
}

static CUresult device_alloc(CUdeviceptr *dptr, size_t size, int dev, int low32)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fake_charge(dev, size) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = spare_take(size, low32);
    if (!p)
        p = fake_map_bytes(size, PROT_READ | PROT_WRITE, low32);
    struct alloc *a = p ? fake_track(p, size, dev, A_DEVICE, NULL, NULL) : NULL;
    if (!a) {
        if (p)
            munmap(p, size);
        fake_uncharge(dev, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->ctx = fake_current_ctx();
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* A context is gone: what was allocated in it goes too, as the driver frees
 * it.  Called with fake_lock held. */
void fake_free_context_allocs_locked(struct CUctx_st *ctx)
{
    for (struct alloc **pp = &fake_allocs; *pp;) {
        struct alloc *a = *pp;
        if (a->kind != A_DEVICE || a->ctx != ctx) {
            pp = &a->next;
            continue;
        }
        *pp = a->next;
        fake_uncharge(a->dev, a->size);
        if (a->ipc_fd)
            close(a->ipc_fd - 1);
        munmap((void *)a->base, a->size);
        fake_managed_free(a->managed);
        free(a);
    }
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    ENTER();
    return device_alloc(dptr, bytesize, fake_current_device(), 0);
}

CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    ENTER();
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p = 0;
    CUresult rc = device_alloc(&p, bytesize, fake_current_device(), 1);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr_v1)p;
    return rc;
}

static CUresult alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned elem)
{
    if (!dptr || !pitch || width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t p = (width + 511) & ~(size_t)511;
    if (height > SIZE_MAX / p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = device_alloc(dptr, p * height, fake_current_device(), 0);
    if (rc == CUDA_SUCCESS)
        *pitch = p;
    return rc;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    ENTER();
    return alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}

CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes, unsigned int Height,
                         unsigned int ElementSizeBytes)
{
    ENTER();
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = ((size_t)WidthInBytes + 511) & ~(size_t)511;
    CUdeviceptr p = 0;
    CUresult rc = device_alloc(&p, pitch * Height, fake_current_device(), 1);
    if (rc == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr_v1)p;
        *pPitch = (unsigned int)pitch;
    }
    return rc;
}

/* Device memory with the state of managed memory's pages (managed.c). */
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    ENTER();
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    struct managed *m = fake_managed_new(bytesize);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = device_alloc(dptr, bytesize, fake_current_device(), 0);
    if (rc != CUDA_SUCCESS) {
        fake_managed_free(m);
        return rc;
    }
    LOCK();
    struct alloc *a = fake_find_containing_locked((uintptr_t)*dptr, 1, 1u << A_DEVICE);
    a->managed = m;
    UNLOCK();
    return CUDA_SUCCESS;
}

/* Called once the kernels that might use ptr are done. */
CUresult fake_mem_free(CUdeviceptr ptr)
{
    if (!ptr)
        return CUDA_SUCCESS;
    LOCK();
    struct alloc *a = fake_untrack_locked((uintptr_t)ptr, (1u << A_DEVICE) | (1u << A_POOL));
    UNLOCK();
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->kind == A_POOL) {
        munmap((void *)a->base, a->size);
        fake_pool_return_block(a);
    } else if (a->ipc_fd) { /* shared with other processes now: never handed out again */
        close(a->ipc_fd - 1);
        munmap((void *)a->base, a->size);
        fake_uncharge(a->dev, a->size);
    } else {
        unmap_or_keep((void *)a->base, a->size);
        fake_uncharge(a->dev, a->size);
    }
    fake_managed_free(a->managed);
    free(a);
    return CUDA_SUCCESS;
}

/* As the driver's, a synchronous free waits for the device. */
CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    ENTER();
    fake_timeline_drain_all();
    return fake_mem_free(dptr);
}

CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    ENTER();
    fake_timeline_drain_all();
    return fake_mem_free(dptr);
}

static CUresult mem_info(unsigned long long *free_b, unsigned long long *total)
{
    int dev = fake_current_device();
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    unsigned long long t = fake_total_memory();
    unsigned long long used = fakegpu_state_device_used(fake_physical_device(dev));
    *total = t;
    *free_b = used < t ? t - used : 0;
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    ENTER();
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long f, t;
    CUresult rc = mem_info(&f, &t);
    if (rc == CUDA_SUCCESS) {
        *free = (size_t)f;
        *total = (size_t)t;
    }
    return rc;
}

CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    ENTER();
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long f, t;
    CUresult rc = mem_info(&f, &t);
    if (rc == CUDA_SUCCESS) {
        *free = f > UINT_MAX ? UINT_MAX : (unsigned int)f;
        *total = t > UINT_MAX ? UINT_MAX : (unsigned int)t;
    }
    return rc;
}
