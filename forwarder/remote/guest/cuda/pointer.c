/*
 * Pointers' attributes, the guest's side (forwarder/remote/executor/cuda/pointer.c is
 * the other; the messages: forwarder/remote/spec/cuda.remote).  A pointer into the guest's own
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
#define MAX_ATTRS VGPU_IN_cuPointerGetAttributes_numAttributes_MAX

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
    struct vgpu_in_cuPointerGetAttributes in = { .ptr = ptr, .numAttributes = n, .attributes = attrs };
    struct vgpu_out_cuPointerGetAttributes out = { .values = v };
    return (CUresult)vgpu_remote_call_cuPointerGetAttributes(slot, 0, &in, &out);
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

/* The one attribute a program sets, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS (a
 * boolean int); a pointer into the guest's own memory has no GPU side to
 * set it on. */
CUresult vgpu_remote_guest_cuPointerSetAttribute(const void *value, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (!value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuPointerSetAttribute in = { .word = *(const unsigned *)value, .attribute = attribute, .ptr = ptr };
    struct vgpu_out_cuPointerSetAttribute out;
    return (CUresult)vgpu_remote_call_cuPointerSetAttribute(SLOT(cuPointerSetAttribute), 0, &in, &out);
}

/* A range's attribute (of managed memory) into the caller's dataSize bytes. */
CUresult vgpu_remote_guest_cuMemRangeGetAttribute(void *data, size_t dataSize, CUmem_range_attribute attribute,
                                                  CUdeviceptr devPtr, size_t count)
{
    if (!data || !dataSize)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuMemRangeGetAttribute in = {
        .dataSize = dataSize, .attribute = attribute, .devPtr = devPtr, .count = count
    };
    struct vgpu_out_cuMemRangeGetAttribute out = { .data = data, .data_size = dataSize };
    return (CUresult)vgpu_remote_call_cuMemRangeGetAttribute(SLOT(cuMemRangeGetAttribute), 0, &in, &out);
}

CUresult vgpu_remote_guest_cuMemRangeGetAttributes(void **data, size_t *dataSizes, CUmem_range_attribute *attributes,
                                                   size_t numAttributes, CUdeviceptr devPtr, size_t count)
{
    if (!data || !dataSizes || !attributes || !numAttributes)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < numAttributes; i++) {
        CUresult r = vgpu_remote_guest_cuMemRangeGetAttribute(data[i], dataSizes[i], attributes[i], devPtr, count);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}
