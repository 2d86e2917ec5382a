/*
 * Host memory: page-locked allocations (not device memory, not counted)
 * and registered ranges, whose device view is their own address.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdlib.h>
#include <sys/mman.h>

static CUresult alloc_host(void **pp, size_t size)
{
    if (!pp || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = fake_map_bytes(size, PROT_READ | PROT_WRITE, 0);
    if (!p || !fake_track(p, size, -1, A_HOST, NULL, NULL)) {
        if (p)
            munmap(p, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    ENTER();
    return alloc_host(pp, bytesize);
}

CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
    ENTER();
    return alloc_host(pp, bytesize);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    ENTER();
    (void)Flags; /* host memory either way: the fake's device reads any */
    return alloc_host(pp, bytesize);
}

CUresult cuMemFreeHost(void *p)
{
    ENTER();
    return fake_unmap_tracked((uintptr_t)p, A_HOST);
}

/* Registered host memory: remembered, so that a range is registered once
 * and unregistered once, as the driver's is; the fake copies from and to
 * any host memory alike.  The driver wants a context current. */
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    ENTER();
    (void)Flags;
    if (!p || !bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    LOCK();
    int known = fake_find_containing_locked((uintptr_t)p, 1, 1u << A_REGISTERED) != NULL;
    UNLOCK();
    if (known)
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return fake_track(p, bytesize, -1, A_REGISTERED, NULL, NULL) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    return cuMemHostRegister_v2(p, bytesize, Flags);
}

/* Page-locked or registered host memory's device view: its own address,
 * as with unified addressing. */
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    ENTER();
    if (!pdptr || Flags)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    int known = fake_find_containing_locked((uintptr_t)p, 1, (1u << A_REGISTERED) | (1u << A_HOST)) != NULL;
    UNLOCK();
    if (!known)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p)
{
    ENTER();
    LOCK();
    struct alloc *a = fake_untrack_locked((uintptr_t)p, 1u << A_REGISTERED);
    UNLOCK();
    free(a);
    return a ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}
