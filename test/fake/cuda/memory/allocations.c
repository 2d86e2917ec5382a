/*
 * Allocation tracking: every range of memory the fake handed out (device
 * pointers are host addresses, from anonymous MAP_NORESERVE mappings), so
 * that device-side ranges are checked against them.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdlib.h>
#include <sys/mman.h>

/* Owned by this file, under fake_lock (fake_cuda.h). */
struct alloc *fake_allocs;

void *fake_map_bytes(size_t size, int prot, int low32)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
#ifdef MAP_32BIT
    if (low32)
        flags |= MAP_32BIT;
#else
    (void)low32;
#endif
    void *p = mmap(NULL, size, prot, flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

struct alloc *fake_track(void *p, size_t size, int dev, enum alloc_kind kind, struct CUmemPoolHandle_st *pool,
                         struct vmm_handle *handle)
{
    struct alloc *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->base = (uintptr_t)p;
    a->size = size;
    a->dev = dev;
    a->kind = kind;
    a->pool = pool;
    a->handle = handle;
    LOCK();
    a->next = fake_allocs;
    fake_allocs = a;
    UNLOCK();
    return a;
}

/* Unlinks the record of a kind in mask starting exactly at base. */
struct alloc *fake_untrack_locked(uintptr_t base, unsigned kind_mask)
{
    for (struct alloc **pp = &fake_allocs; *pp; pp = &(*pp)->next) {
        struct alloc *a = *pp;
        if (a->base == base && (kind_mask & (1u << a->kind))) {
            *pp = a->next;
            return a;
        }
    }
    return NULL;
}

CUresult fake_unmap_tracked(uintptr_t base, enum alloc_kind kind)
{
    LOCK();
    struct alloc *a = fake_untrack_locked(base, 1u << kind);
    UNLOCK();
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    munmap((void *)a->base, a->size);
    free(a);
    return CUDA_SUCCESS;
}

struct alloc *fake_find_containing_locked(uintptr_t p, size_t n, unsigned kind_mask)
{
    for (struct alloc *a = fake_allocs; a; a = a->next)
        if ((kind_mask & (1u << a->kind)) && p >= a->base && n <= a->size && p - a->base <= a->size - n)
            return a;
    return NULL;
}

/* Whether [p, p+n) lies inside memory the fake handed out. */
int fake_range_ok(CUdeviceptr p, size_t n)
{
    if (!p)
        return 0;
    LOCK();
    int ok = fake_find_containing_locked((uintptr_t)p, n ? n : 1, ACCESSIBLE) != NULL;
    UNLOCK();
    return ok;
}
