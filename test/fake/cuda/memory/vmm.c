/*
 * Virtual memory management: handles of physical memory (cuMemCreate,
 * counted: cuMemRetainAllocationHandle takes a reference, cuMemRelease
 * gives one back), reserved address ranges, and the mappings of one into
 * the other.  Memory asked for as shareable by a POSIX file descriptor is
 * a memfd, which every mapping of it maps (cuMemExportToShareableHandle
 * gives a descriptor of it, and cuMemImportFromShareableHandle makes a
 * handle of one, in this process or another, as the driver's do).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define GRANULARITY (2ULL << 20)

#define VMM_MAGIC 0x484d4d56u /* "VMMH" */

struct vmm_handle {
    unsigned magic;
    int alive; /* its references: cuMemCreate's, and each cuMemRetainAllocationHandle's */
    size_t size;
    int dev;      /* charged to it (-1: host memory, or imported: the exporter's charge) */
    int memfd;    /* shareable by a descriptor: what its mappings map; else -1 */
    CUmemAllocationProp prop;
};

static struct vmm_handle *vmm_get(CUmemGenericAllocationHandle h)
{
    struct vmm_handle *v = (struct vmm_handle *)(uintptr_t)h;
    return v && v->magic == VMM_MAGIC && __atomic_load_n(&v->alive, __ATOMIC_ACQUIRE) ? v : NULL;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    ENTER();
    (void)option;
    if (!granularity || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = GRANULARITY;
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
    ENTER();
    (void)flags;
    /* Device memory is charged to its device; host memory (a host location)
     * to no device. */
    int host = prop && prop->location.type == CU_MEM_LOCATION_TYPE_HOST;
    if (!handle || !prop || size == 0 || size % GRANULARITY != 0 ||
        (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE && !host))
        return CUDA_ERROR_INVALID_VALUE;
    if (!host && !fake_valid_device(prop->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    struct vmm_handle *v = calloc(1, sizeof *v);
    if (!v)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!host && fake_charge(prop->location.id, size) != 0) {
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    v->magic = VMM_MAGIC;
    v->alive = 1;
    v->size = size;
    v->dev = host ? -1 : prop->location.id;
    v->memfd = -1;
    v->prop = *prop;
    if ((prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) &&
        ((v->memfd = memfd_create("fake-vmm", MFD_CLOEXEC)) < 0 || ftruncate(v->memfd, (off_t)size) != 0)) {
        if (v->dev >= 0)
            fake_uncharge(v->dev, size);
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    ENTER();
    struct vmm_handle *v = vmm_get(handle);
    int refs = v ? __atomic_load_n(&v->alive, __ATOMIC_ACQUIRE) : 0;
    while (refs > 0 && !__atomic_compare_exchange_n(&v->alive, &refs, refs - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    if (refs <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (refs == 1 && v->dev >= 0)
        fake_uncharge(v->dev, v->size); /* the handle object is kept: stale use is detected */
    if (refs == 1 && v->memfd >= 0) /* its mappings keep their memory */
        close(v->memfd);
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    ENTER();
    (void)addr;
    (void)flags;
    if (!ptr || size == 0 || size % GRANULARITY != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < GRANULARITY)
        alignment = GRANULARITY;
    if (alignment & (alignment - 1))
        return CUDA_ERROR_INVALID_VALUE;
    size_t span = size + alignment;
    uint8_t *raw = fake_map_bytes(span, PROT_NONE, 0);
    if (!raw)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t base = ((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1);
    if (base > (uintptr_t)raw)
        munmap(raw, base - (uintptr_t)raw);
    uintptr_t end = (uintptr_t)raw + span;
    if (end > base + size)
        munmap((void *)(base + size), end - (base + size));
    if (!fake_track((void *)base, size, -1, A_RESERVE, NULL, NULL)) {
        munmap((void *)base, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    ENTER();
    fake_timeline_drain_all(); /* no queued kernel may touch the range after */
    LOCK();
    struct alloc *a = fake_untrack_locked((uintptr_t)ptr, 1u << A_RESERVE);
    if (a && a->size != size) {
        a->next = fake_allocs; /* wrong size: put it back */
        fake_allocs = a;
        a = NULL;
    }
    /* Mappings left inside the range go with it. */
    for (struct alloc **pp = &fake_allocs; a && *pp;) {
        struct alloc *m = *pp;
        if (m->kind == A_MAPPED && m->base >= a->base && m->base < a->base + a->size) {
            *pp = m->next;
            free(m);
        } else {
            pp = &m->next;
        }
    }
    UNLOCK();
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    munmap((void *)a->base, a->size);
    free(a);
    return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    ENTER();
    (void)flags;
    struct vmm_handle *v = vmm_get(handle);
    if (!v || size == 0 || offset > v->size || size > v->size - offset)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    int ok = fake_find_containing_locked((uintptr_t)ptr, size, 1u << A_RESERVE) != NULL &&
             fake_find_containing_locked((uintptr_t)ptr, 1, 1u << A_MAPPED) == NULL;
    UNLOCK();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    if (v->memfd >= 0 ? mmap((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, v->memfd,
                             (off_t)offset) == MAP_FAILED
                      : mprotect((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_track((void *)(uintptr_t)ptr, size, v->dev, A_MAPPED, NULL, v))
        return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    ENTER();
    fake_timeline_drain_all(); /* no queued kernel may touch the range after */
    LOCK();
    struct alloc *a = fake_untrack_locked((uintptr_t)ptr, 1u << A_MAPPED);
    UNLOCK();
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    (void)size;
    /* Drop the contents and make the range inaccessible again. */
    mmap((void *)a->base, a->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    free(a);
    return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    ENTER();
    if (!desc || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    int ok = fake_find_containing_locked((uintptr_t)ptr, size, 1u << A_RESERVE) != NULL &&
             fake_find_containing_locked((uintptr_t)ptr, 1, 1u << A_MAPPED) != NULL;
    UNLOCK();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
    ENTER();
    struct vmm_handle *v = vmm_get(handle);
    if (!prop || !v)
        return CUDA_ERROR_INVALID_VALUE;
    *prop = v->prop;
    return CUDA_SUCCESS;
}

/* The handle mapped at addr (anywhere in its mapping), with a reference of
 * its own, which cuMemRelease gives back, as the driver's. */
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    ENTER();
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct alloc *a = fake_find_containing_locked((uintptr_t)addr, 1, 1u << A_MAPPED);
    struct vmm_handle *v = a ? a->handle : NULL;
    int refs = v ? __atomic_load_n(&v->alive, __ATOMIC_ACQUIRE) : 0;
    while (refs > 0 && !__atomic_compare_exchange_n(&v->alive, &refs, refs + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    UNLOCK();
    if (refs <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
    return CUDA_SUCCESS;
}

/* A descriptor of memory asked for as shareable by one: the caller's. */
CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType, unsigned long long flags)
{
    ENTER();
    struct vmm_handle *v = vmm_get(handle);
    if (!shareableHandle || !v || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || v->memfd < 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    int fd = fcntl(v->memfd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *(int *)shareableHandle = fd;
    return CUDA_SUCCESS;
}

/* A handle of the memory a descriptor exported (which stays the caller's). */
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                        CUmemAllocationHandleType shHandleType)
{
    ENTER();
    int fd = (int)(intptr_t)osHandle;
    struct stat st;
    if (!handle || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    if (fstat(fd, &st) != 0) /* no descriptor at all */
        return CUDA_ERROR_INVALID_VALUE;
    if (!S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size % GRANULARITY != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    struct vmm_handle *v = calloc(1, sizeof *v);
    if (!v || (v->memfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    v->magic = VMM_MAGIC;
    v->alive = 1;
    v->size = (size_t)st.st_size;
    v->dev = -1;
    v->prop = (CUmemAllocationProp){ .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                     .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                     .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
    return CUDA_SUCCESS;
}
