/*
 * Virtual memory management (cuMemCreate, cuMemAddressReserve and the rest
 * the signature does not describe), the guest's side
 * (forwarder/remote/executor/cuda/vmm.c is the other; what crosses: docs/design/remote.md).
 * cuMemMap, cuMemUnmap, cuMemRelease and cuMemGetAccess carry plain values
 * and are generated.  An allocation's properties cross as their bytes; a
 * Windows handle's metadata has no meaning here and is refused.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name
#define MAX_ACCESS 64

CUresult vgpu_remote_guest_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                               unsigned long long flags)
{
    if (!ptr)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t in[4] = { size, alignment, addr, flags }, out = 0;
    CUresult r = vgpu_remote_call_words(SLOT(cuMemAddressReserve), in, 4, &out, 1);
    if (r == CUDA_SUCCESS)
        *ptr = out;
    return r;
}

CUresult vgpu_remote_guest_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    uint64_t in[2] = { ptr, size };
    return vgpu_remote_call_words(SLOT(cuMemAddressFree), in, 2, NULL, 0);
}

/* [words][the properties' bytes]: one word back. */
static CUresult with_properties(unsigned slot, const uint64_t *words, unsigned n, const CUmemAllocationProp *prop,
                                uint64_t *out)
{
    if (!prop || !out)
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->win32HandleMetaData)
        return vgpu_remote_refuse(slot);
    size_t got = 0;
    struct iovec q[2] = { { (void *)words, n * sizeof(uint64_t) }, { (void *)prop, sizeof(*prop) } },
                 a = { out, sizeof(*out) };
    CUresult r = vgpu_remote_call(slot, q, 2, &a, 1, &got);
    return r == CUDA_SUCCESS && got != sizeof(*out) ? CUDA_ERROR_UNKNOWN : r;
}

CUresult vgpu_remote_guest_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                         CUmemAllocationGranularity_flags option)
{
    uint64_t w = (uint64_t)option, out = 0;
    if (!granularity)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = with_properties(SLOT(cuMemGetAllocationGranularity), &w, 1, prop, &out);
    if (r == CUDA_SUCCESS)
        *granularity = out;
    return r;
}

CUresult vgpu_remote_guest_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                       const CUmemAllocationProp *prop, unsigned long long flags)
{
    uint64_t w[2] = { size, flags }, out = 0;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = with_properties(SLOT(cuMemCreate), w, 2, prop, &out);
    if (r == CUDA_SUCCESS)
        *handle = out;
    return r;
}

CUresult vgpu_remote_guest_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    if (count && !desc)
        return CUDA_ERROR_INVALID_VALUE;
    if (count > MAX_ACCESS)
        return vgpu_remote_refuse(SLOT(cuMemSetAccess));
    uint64_t w[3] = { ptr, size, count };
    struct iovec q[2] = { { w, sizeof(w) }, { (void *)desc, count * sizeof(*desc) } };
    return vgpu_remote_call(SLOT(cuMemSetAccess), q, 2, NULL, 0, NULL);
}
