/*
 * 3D copies between contexts (cuMemcpy3DPeer and its forms), the guest's
 * side: a 3D copy whose addresses are unified (every device's memory has
 * an address of its own, which names its device and so its context), sent
 * as cuMemcpy3D_v2's or cuMemcpy3DAsync_v2's message (copy.c) with no
 * message of its own.  An array side is its array's, whatever context it
 * is named with.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

static CUDA_MEMCPY3D without_contexts(const CUDA_MEMCPY3D_PEER *c)
{
    return (CUDA_MEMCPY3D){ VGPU_REMOTE_COPY_3D_FIELDS(c) };
}

CUresult vgpu_remote_guest_cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D copy = without_contexts(c);
    return vgpu_remote_guest_cuMemcpy3D_v2(&copy);
}

CUresult vgpu_remote_guest_cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D copy = without_contexts(c);
    return vgpu_remote_guest_cuMemcpy3D_v2_ptds(&copy);
}

CUresult vgpu_remote_guest_cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *c, CUstream stream)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D copy = without_contexts(c);
    return vgpu_remote_guest_cuMemcpy3DAsync_v2(&copy, stream);
}

CUresult vgpu_remote_guest_cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *c, CUstream stream)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D copy = without_contexts(c);
    return vgpu_remote_guest_cuMemcpy3DAsync_v2_ptsz(&copy, stream);
}
