/*
 * Contexts as CUDA 13's header spells cuCtxCreate (cuCtxCreate_v4), the
 * guest's side: its parameters are cuCtxCreate_v3's message (execution
 * affinity) or none (cuCtxCreate_v2's), which the spec carries
 * (forwarder/remote/spec/cuda.remote).  A CUDA-in-graphics context shares
 * a D3D12 or Vulkan queue of the guest's with the driver, which the host's
 * driver cannot reach: refused.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

CUresult vgpu_remote_guest_cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                                          CUdevice dev)
{
    if (!params)
        return VGPU_REMOTE_CUDA(cuCtxCreate_v2)(pctx, flags, dev);
    if (params->cigParams)
        return vgpu_remote_refuse_why(VGPU_CUDA_SLOT_cuCtxCreate_v4,
                                      "a CUDA-in-graphics context shares a graphics queue of the guest's");
    return VGPU_REMOTE_CUDA(cuCtxCreate_v3)(pctx, params->execAffinityParams, params->numExecAffinityParams, flags,
                                            dev);
}
