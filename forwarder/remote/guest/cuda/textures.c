/*
 * Texture objects, the guest's side (the executor's, which checks the
 * resource: forwarder/remote/executor/cuda/textures.c).  The descriptors
 * cross as they are, the view's with a word saying whether there is one.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <string.h>

CUresult vgpu_remote_guest_cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
                                             const CUDA_TEXTURE_DESC *pTexDesc,
                                             const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
    if (!pTexObject || !pResDesc || !pTexDesc)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuTexObjectCreate in;
    memset(&in, 0, sizeof(in));
    in.pResDesc = *pResDesc;
    in.pTexDesc = *pTexDesc;
    in.hasView = pResViewDesc != NULL;
    if (pResViewDesc)
        in.pResViewDesc = *pResViewDesc;
    struct vgpu_out_cuTexObjectCreate out = { 0 };
    CUresult r = (CUresult)vgpu_remote_call_cuTexObjectCreate(VGPU_CUDA_SLOT_cuTexObjectCreate, 0, &in, &out);
    if (r == CUDA_SUCCESS)
        *pTexObject = out.pTexObject;
    return r;
}
