/*
 * Memory pools' attributes and the device's graph memory pool's, the
 * guest's side (the executor's is generated; the messages:
 * forwarder/remote/spec/cuda.remote).  A value crosses as a 64-bit word
 * and is the caller's at its attribute's own size: an int for the reuse
 * policies, a cuuint64_t for the thresholds and counts.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

/* The bytes of attr's value: 4 (int), 8 (cuuint64_t), or 0 for one the
 * guest does not know (CUDA_ERROR_INVALID_VALUE, as the driver's). */
static size_t value_size(CUmemPool_attribute attr)
{
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: return sizeof(int);
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: return sizeof(cuuint64_t);
    default: return 0;
    }
}

CUresult vgpu_remote_guest_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    size_t size = value_size(attr);
    if (!value || !size)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuMemPoolGetAttribute in = { .pool = pool, .attr = attr };
    struct vgpu_out_cuMemPoolGetAttribute out = { 0 };
    CUresult r = (CUresult)vgpu_remote_call_cuMemPoolGetAttribute(SLOT(cuMemPoolGetAttribute), 0, &in, &out);
    if (r != CUDA_SUCCESS)
        return r;
    if (size == sizeof(int)) {
        int v = (int)out.value;
        memcpy(value, &v, sizeof(v));
    } else {
        memcpy(value, &out.value, sizeof(out.value));
    }
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    size_t size = value_size(attr);
    if (!value || !size)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuMemPoolSetAttribute in = { .pool = pool, .attr = attr };
    if (size == sizeof(int)) {
        int v;
        memcpy(&v, value, sizeof(v));
        in.word = (uint64_t)(uint32_t)v;
    } else {
        memcpy(&in.word, value, sizeof(in.word));
    }
    struct vgpu_out_cuMemPoolSetAttribute out;
    return (CUresult)vgpu_remote_call_cuMemPoolSetAttribute(SLOT(cuMemPoolSetAttribute), 0, &in, &out);
}

/* Every graph memory attribute's value is a cuuint64_t. */
CUresult vgpu_remote_guest_cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuDeviceSetGraphMemAttribute in = { .device = device, .attr = attr };
    memcpy(&in.word, value, sizeof(in.word));
    struct vgpu_out_cuDeviceSetGraphMemAttribute out;
    return (CUresult)vgpu_remote_call_cuDeviceSetGraphMemAttribute(SLOT(cuDeviceSetGraphMemAttribute), 0, &in, &out);
}
