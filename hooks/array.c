/*
 * CUDA array hooks.  An array's footprint is not returned by the driver, so
 * the hook computes it from the descriptor (texel size x extent, and the
 * mip chain for mipmapped arrays) for the backend's claim.
 */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_cuda_slots.h"

#include <cuda.h>

/* Bits per element of one channel (or per texel for packed formats). */
static unsigned format_bits(CUarray_format f, unsigned channels)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 8 * channels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 16 * channels;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
        return 32 * channels;
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
        return 8;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
        return 16;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
        return 32;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
        return 64;
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
        return 4;
    case CU_AD_FORMAT_NV12:
        return 12;
    default:
        /* Other block-compressed and video formats take at most 32 bits per
         * texel; over-counting keeps the quota a bound. */
        return 32;
    }
}

static size_t extent_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned channels)
{
    return (w * (h ? h : 1) * (d ? d : 1) * format_bits(f, channels ? channels : 1) + 7) / 8;
}

static CUresult create(const char *name, size_t bytes, CUresult (*call)(const void *, CUarray *), const void *desc,
                       CUarray *pHandle)
{
    struct vgpu_mem_claim c = { .kind = VGPU_MEM_ARRAY, .device = -1, .bytes = bytes };
    CUresult r = vgpu_backend_mem_claim(&c);
    if (r == CUDA_SUCCESS) {
        r = call(desc, pHandle);
        vgpu_backend_mem_settle(&c, r, r == CUDA_SUCCESS ? (uintptr_t)*pHandle : 0);
    }
    vgpu_trace(name, r, "%zu bytes -> %p", bytes, r ? NULL : (void *)*pHandle);
    return r;
}

static CUresult call_2d(const void *desc, CUarray *h)
{
    return VGPU_REAL_CUDA(cuArrayCreate_v2)(h, desc);
}

static CUresult call_2d_v1(const void *desc, CUarray *h)
{
    return VGPU_REAL_CUDA(cuArrayCreate)(h, desc);
}

static CUresult call_3d(const void *desc, CUarray *h)
{
    return VGPU_REAL_CUDA(cuArray3DCreate_v2)(h, desc);
}

static CUresult call_3d_v1(const void *desc, CUarray *h)
{
    return VGPU_REAL_CUDA(cuArray3DCreate)(h, desc);
}

VGPU_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
    if (!d || !pHandle)
        return VGPU_REAL_CUDA(cuArrayCreate_v2)(pHandle, d);
    return create("cuArrayCreate_v2", extent_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels), call_2d, d,
                  pHandle);
}

VGPU_EXPORT CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *d)
{
    if (!d || !pHandle)
        return VGPU_REAL_CUDA(cuArrayCreate)(pHandle, d);
    return create("cuArrayCreate", extent_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels), call_2d_v1, d,
                  pHandle);
}

VGPU_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    if (!d || !pHandle)
        return VGPU_REAL_CUDA(cuArray3DCreate_v2)(pHandle, d);
    return create("cuArray3DCreate_v2", extent_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels),
                  call_3d, d, pHandle);
}

VGPU_EXPORT CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *d)
{
    if (!d || !pHandle)
        return VGPU_REAL_CUDA(cuArray3DCreate)(pHandle, d);
    return create("cuArray3DCreate", extent_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels),
                  call_3d_v1, d, pHandle);
}

VGPU_EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
    struct vgpu_mem_free f;
    vgpu_backend_mem_free_begin(&f, VGPU_MEM_ARRAY, (uintptr_t)hArray);
    CUresult r = VGPU_REAL_CUDA(cuArrayDestroy)(hArray);
    vgpu_backend_mem_free_end(&f, r);
    vgpu_trace("cuArrayDestroy", r, "%p", (void *)hArray);
    return r;
}

VGPU_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int levels)
{
    size_t bytes = 0;
    if (d)
        for (unsigned l = 0; l < (levels ? levels : 1); l++) {
            size_t w = d->Width >> l, h = d->Height >> l, z = d->Depth >> l;
            bytes += extent_bytes(w ? w : 1, d->Height ? (h ? h : 1) : 0, d->Depth ? (z ? z : 1) : 0, d->Format,
                                  d->NumChannels);
        }
    struct vgpu_mem_claim c = { .kind = VGPU_MEM_ARRAY, .device = -1, .bytes = bytes };
    CUresult r = vgpu_backend_mem_claim(&c);
    if (r == CUDA_SUCCESS) {
        r = VGPU_REAL_CUDA(cuMipmappedArrayCreate)(pHandle, d, levels);
        vgpu_backend_mem_settle(&c, r, r == CUDA_SUCCESS ? (uintptr_t)*pHandle : 0);
    }
    vgpu_trace("cuMipmappedArrayCreate", r, "%u levels, %zu bytes -> %p", levels, bytes,
               r ? NULL : (void *)*pHandle);
    return r;
}

VGPU_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    struct vgpu_mem_free f;
    vgpu_backend_mem_free_begin(&f, VGPU_MEM_ARRAY, (uintptr_t)hMipmappedArray);
    CUresult r = VGPU_REAL_CUDA(cuMipmappedArrayDestroy)(hMipmappedArray);
    vgpu_backend_mem_free_end(&f, r);
    vgpu_trace("cuMipmappedArrayDestroy", r, "%p", (void *)hMipmappedArray);
    return r;
}
