/*
 * What a pointer is: the range it lies in (cuMemGetAddressRange) and its
 * attributes (cuPointerGetAttribute(s); cuPointerSetAttribute of the one a
 * program sets).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <limits.h>
#include <string.h>

static CUresult address_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    LOCK();
    struct alloc *a = fake_find_containing_locked((uintptr_t)dptr, 1, ACCESSIBLE);
    uintptr_t base = a ? a->base : 0;
    size_t size = a ? a->size : 0;
    UNLOCK();
    if (!a)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = (CUdeviceptr)base;
    if (psize)
        *psize = size;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    ENTER();
    return address_range(pbase, psize, dptr);
}

/* A pointer's attributes: for device memory (cuMemAlloc*, a pool's) its
 * type, device, context and range; for page-locked host memory its type
 * and range; for any other pointer zeros.  Unknown attributes:
 * INVALID_VALUE. */
static CUresult pointer_attribute(CUpointer_attribute attr, CUdeviceptr ptr, void *data, int single)
{
    LOCK();
    struct alloc *a = fake_find_containing_locked((uintptr_t)ptr, 1, ACCESSIBLE);
    struct alloc copy = a ? *a : (struct alloc){ 0 };
    UNLOCK();
    if (single && !a)
        return CUDA_ERROR_INVALID_VALUE;
    int device = a && copy.kind != A_HOST;
    unsigned u = 0;
    unsigned long long w = 0;
    int wide = 0;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: u = !a ? 0 : device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: u = device ? (unsigned)copy.dev : (unsigned)-1; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: u = copy.managed != NULL; break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: u = copy.sync_memops; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: u = a != NULL; break;
    case CU_POINTER_ATTRIBUTE_CONTEXT: wide = 1, w = (uintptr_t)(device ? copy.ctx : NULL); break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: wide = 1, w = a ? ptr : 0; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: wide = 1, w = copy.base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: wide = 1, w = copy.size; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    if (wide)
        memcpy(data, &w, sizeof(w));
    else
        memcpy(data, &u, sizeof(u));
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    ENTER();
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    return pointer_attribute(attribute, ptr, data, 1);
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                CUdeviceptr ptr)
{
    ENTER();
    if (!numAttributes || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < numAttributes; i++) {
        CUresult rc = data[i] ? pointer_attribute(attributes[i], ptr, data[i], 0) : CUDA_SUCCESS;
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}

/* The one attribute a program sets, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS (an
 * unsigned boolean), on the whole allocation ptr lies in, as the driver
 * sets it. */
CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    ENTER();
    if (!value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct alloc *a = fake_find_containing_locked((uintptr_t)ptr, 1, ACCESSIBLE & ~(1u << A_REGISTERED));
    if (a)
        a->sync_memops = *(const unsigned *)value != 0;
    UNLOCK();
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize, CUdeviceptr_v1 dptr)
{
    ENTER();
    CUdeviceptr b;
    size_t s;
    CUresult rc = address_range(&b, &s, dptr);
    if (rc == CUDA_SUCCESS) {
        if (pbase)
            *pbase = (CUdeviceptr_v1)b;
        if (psize)
            *psize = s > UINT_MAX ? UINT_MAX : (unsigned int)s;
    }
    return rc;
}
