/*
 * Texture and surface objects, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/textures.c; the messages:
 * forwarder/remote/spec/cuda.remote).  A resource descriptor names what
 * the driver will read through the object: an array or mipmapped array
 * the guest was given, or device memory of its allocations, checked here
 * over the whole extent the descriptor gives before the driver sees it.
 */
#include "forwarder/remote/executor/cuda/calls.h"

/* Whether the guest may have an object read r: 0, or the code to reply. */
static int resource_is_the_guests(struct vgpu_exec *x, const CUDA_RESOURCE_DESC *r, const char *call)
{
    uint64_t n;
    switch (r->resType) {
    case CU_RESOURCE_TYPE_ARRAY:
        return vgpu_exec_handle_known(x, (uint64_t)(uintptr_t)r->res.array.hArray, false)
                   ? 0
                   : CUDA_ERROR_INVALID_HANDLE;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
        return vgpu_exec_handle_known(x, (uint64_t)(uintptr_t)r->res.mipmap.hMipmappedArray, false)
                   ? 0
                   : CUDA_ERROR_INVALID_HANDLE;
    case CU_RESOURCE_TYPE_LINEAR:
        return vgpu_exec_device_range(x, r->res.linear.devPtr, r->res.linear.sizeInBytes, call)
                   ? 0
                   : CUDA_ERROR_INVALID_VALUE;
    case CU_RESOURCE_TYPE_PITCH2D:
        if (__builtin_mul_overflow((uint64_t)r->res.pitch2D.pitchInBytes, (uint64_t)r->res.pitch2D.height, &n))
            return CUDA_ERROR_INVALID_VALUE;
        return vgpu_exec_device_range(x, r->res.pitch2D.devPtr, n, call) ? 0 : CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

int vgpu_exec_cuTexObjectCreate(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuTexObjectCreate *in)
{
    struct vgpu_out_cuTexObjectCreate out = { 0 };
    int r = resource_is_the_guests(x, &in->pResDesc, "cuTexObjectCreate");
    if (r == 0)
        r = ((CUresult(*)(CUtexObject *, const CUDA_RESOURCE_DESC *, const CUDA_TEXTURE_DESC *,
                          const CUDA_RESOURCE_VIEW_DESC *))fn)(&out.pTexObject, &in->pResDesc, &in->pTexDesc,
                                                              in->hasView ? &in->pResViewDesc : NULL);
    return vgpu_exec_reply_cuTexObjectCreate(x, r, in, &out);
}

int vgpu_exec_cuSurfObjectCreate(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuSurfObjectCreate *in)
{
    struct vgpu_out_cuSurfObjectCreate out = { 0 };
    int r = resource_is_the_guests(x, &in->pResDesc, "cuSurfObjectCreate");
    if (r == 0)
        r = ((CUresult(*)(CUsurfObject *, const CUDA_RESOURCE_DESC *))fn)(&out.pSurfObject, &in->pResDesc);
    return vgpu_exec_reply_cuSurfObjectCreate(x, r, in, &out);
}
