/*
 * Virtual memory management, the guest's side of the calls with an
 * allocation's properties (forwarder/remote/executor/cuda/vmm.c is the
 * other; the messages: forwarder/remote/spec/cuda.remote).  The properties
 * cross as their bytes; a Windows handle's metadata has no meaning here and
 * is refused.  cuMemAddressReserve, cuMemAddressFree and cuMemSetAccess are
 * generated whole; cuMemMap, cuMemUnmap, cuMemRelease and cuMemGetAccess
 * are carried.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#define SLOT(name) VGPU_CUDA_SLOT_##name

static bool properties_carried(unsigned slot, const CUmemAllocationProp *prop, CUresult *r)
{
    if (!prop) {
        *r = CUDA_ERROR_INVALID_VALUE;
        return false;
    }
    if (prop->win32HandleMetaData) {
        *r = vgpu_remote_refuse_why(slot, "a Windows handle's metadata has no meaning on the host");
        return false;
    }
    return true;
}

CUresult vgpu_remote_guest_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                         CUmemAllocationGranularity_flags option)
{
    CUresult r;
    if (!granularity)
        return CUDA_ERROR_INVALID_VALUE;
    if (!properties_carried(SLOT(cuMemGetAllocationGranularity), prop, &r))
        return r;
    struct vgpu_in_cuMemGetAllocationGranularity in = { .prop = *prop, .option = option };
    struct vgpu_out_cuMemGetAllocationGranularity out = { 0 };
    r = (CUresult)vgpu_remote_call_cuMemGetAllocationGranularity(SLOT(cuMemGetAllocationGranularity), 0, &in, &out);
    if (r == CUDA_SUCCESS)
        *granularity = out.granularity;
    return r;
}

CUresult vgpu_remote_guest_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                       const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult r;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    if (!properties_carried(SLOT(cuMemCreate), prop, &r))
        return r;
    struct vgpu_in_cuMemCreate in = { .size = size, .prop = *prop, .flags = flags };
    struct vgpu_out_cuMemCreate out = { 0 };
    r = (CUresult)vgpu_remote_call_cuMemCreate(SLOT(cuMemCreate), 0, &in, &out);
    if (r == CUDA_SUCCESS)
        *handle = out.handle;
    return r;
}
