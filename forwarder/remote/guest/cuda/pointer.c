/*
 * Pointers' attributes, the guest's side (forwarder/remote/executor/cuda/pointer.c is
 * the other; what crosses: docs/design/remote.md).  A pointer into the guest's own
 * page-locked or registered memory is answered here (host memory, its
 * block's range); any other is asked of the executor's driver.  Only
 * attributes whose values are one integer, pointer or handle are carried,
 * each written at its own size.
 */
#include "forwarder/dispatch.h"
#include "common/log.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#define SLOT(name) VGPU_CUDA_SLOT_##name
#define MAX_ATTRS 32

/* The bytes an attribute's value takes, 0 for one not carried. */
static size_t value_size(CUpointer_attribute a)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: return 4;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: /* a 64-bit mask: the driver writes 8 bytes */
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: return 8;
    default: return 0;
    }
}

/* An attribute not carried: the peer-to-peer tokens (for the host's
 * kernel), and those whose values' types this file does not know. */
static CUresult refuse_attribute(unsigned slot, CUpointer_attribute a)
{
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        vgpu_warn("remote GPU: pointer attribute %d is not carried (and any other such, unsaid)", (int)a);
    return vgpu_remote_refuse(slot);
}

/* An attribute of guest host memory (base, size, mapped: its block). */
static CUresult host_value(CUpointer_attribute a, CUdeviceptr ptr, void *base, size_t size, bool mapped, uint64_t *v)
{
    CUcontext ctx = NULL;
    CUdevice dev = 0;
    CUresult r = CUDA_SUCCESS;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        r = VGPU_REMOTE_CUDA(cuCtxGetCurrent)(&ctx);
        *v = (uint64_t)(uintptr_t)ctx;
        return r;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        r = VGPU_REMOTE_CUDA(cuCtxGetDevice)(&dev);
        *v = (uint64_t)dev;
        return r;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *v = CU_MEMORYTYPE_HOST; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *v = ptr; /* as under unified addressing; no kernel reads it (host_memory.c) */
        return mapped ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: *v = ptr; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *v = (uint64_t)(uintptr_t)base; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: *v = size; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: *v = (uint64_t)(uintptr_t)base; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *v = 0; /* none: the GPU reaches guest memory only by copies */
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED: *v = 1; return CUDA_SUCCESS;
    default: /* sync memops, managed, IPC, RDMA: no; no pool */ *v = 0; return CUDA_SUCCESS;
    }
}

/* The n values: answered here for guest memory, else by the executor's
 * driver through slot (the plural call never fails for a pointer it does
 * not know; the singular one does). */
static CUresult values(unsigned slot, unsigned n, const CUpointer_attribute *attrs, CUdeviceptr ptr, uint64_t *v)
{
    void *base;
    size_t size;
    bool mapped;
    if (vgpu_remote_host_block((const void *)(uintptr_t)ptr, &base, &size, &mapped)) {
        for (unsigned i = 0; i < n; i++) {
            CUresult r = host_value(attrs[i], ptr, base, size, mapped, &v[i]);
            if (r != CUDA_SUCCESS && slot == SLOT(cuPointerGetAttribute))
                return r;
        }
        return CUDA_SUCCESS;
    }
    uint64_t q[2 + MAX_ATTRS] = { ptr, n };
    for (unsigned i = 0; i < n; i++)
        q[2 + i] = (uint64_t)attrs[i];
    return vgpu_remote_call_words(slot, q, 2 + n, v, n);
}

static void store(void *data, CUpointer_attribute a, uint64_t v)
{
    if (value_size(a) == 4) {
        uint32_t w = (uint32_t)v;
        __builtin_memcpy(data, &w, 4);
    } else {
        __builtin_memcpy(data, &v, 8);
    }
}

CUresult vgpu_remote_guest_cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                                  CUdeviceptr ptr)
{
    if (!n || !attrs || !data)
        return CUDA_ERROR_INVALID_VALUE;
    if (n > MAX_ATTRS)
        return vgpu_remote_refuse(SLOT(cuPointerGetAttributes));
    for (unsigned i = 0; i < n; i++)
        if (!value_size(attrs[i]))
            return refuse_attribute(SLOT(cuPointerGetAttributes), attrs[i]);
    uint64_t v[MAX_ATTRS];
    CUresult r = values(SLOT(cuPointerGetAttributes), n, attrs, ptr, v);
    if (r == CUDA_SUCCESS)
        for (unsigned i = 0; i < n; i++)
            if (data[i])
                store(data[i], attrs[i], v[i]);
    return r;
}

CUresult vgpu_remote_guest_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    if (!value_size(attribute))
        return refuse_attribute(SLOT(cuPointerGetAttribute), attribute);
    uint64_t v = 0;
    CUresult r = values(SLOT(cuPointerGetAttribute), 1, &attribute, ptr, &v);
    if (r == CUDA_SUCCESS)
        store(data, attribute, v);
    return r;
}
