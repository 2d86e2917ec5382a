/*
 * The 32-bit forms of CUDA 3.x (cuMemcpyHtoD, cuMemcpy2D, cuModuleGetGlobal,
 * ...), which a program built before the _v2 names, or one that asks
 * cuGetProcAddress for an old version, calls: each widened into its _v2
 * form and sent as that form's message (forwarder/remote/spec/cuda.remote),
 * with no message of its own.  A 64-bit answer that does not fit the old
 * form's 32 bits is CUDA_ERROR_INVALID_VALUE.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <stdint.h>

CUresult vgpu_remote_guest_cuMemcpyHtoD(CUdeviceptr_v1 dst, const void *src, unsigned int n)
{
    return vgpu_remote_guest_cuMemcpyHtoD_v2(dst, src, n);
}

CUresult vgpu_remote_guest_cuMemcpyHtoDAsync(CUdeviceptr_v1 dst, const void *src, unsigned int n, CUstream stream)
{
    return vgpu_remote_guest_cuMemcpyHtoDAsync_v2(dst, src, n, stream);
}

CUresult vgpu_remote_guest_cuMemcpyDtoH(void *dst, CUdeviceptr_v1 src, unsigned int n)
{
    return vgpu_remote_guest_cuMemcpyDtoH_v2(dst, src, n);
}

CUresult vgpu_remote_guest_cuMemcpyDtoHAsync(void *dst, CUdeviceptr_v1 src, unsigned int n, CUstream stream)
{
    return vgpu_remote_guest_cuMemcpyDtoHAsync_v2(dst, src, n, stream);
}

CUresult vgpu_remote_guest_cuMemcpyHtoA(CUarray a, unsigned int off, const void *src, unsigned int n)
{
    return vgpu_remote_guest_cuMemcpyHtoA_v2(a, off, src, n);
}

CUresult vgpu_remote_guest_cuMemcpyHtoAAsync(CUarray a, unsigned int off, const void *src, unsigned int n,
                                             CUstream stream)
{
    return vgpu_remote_guest_cuMemcpyHtoAAsync_v2(a, off, src, n, stream);
}

CUresult vgpu_remote_guest_cuMemcpyAtoH(void *dst, CUarray a, unsigned int off, unsigned int n)
{
    return vgpu_remote_guest_cuMemcpyAtoH_v2(dst, a, off, n);
}

CUresult vgpu_remote_guest_cuMemcpyAtoHAsync(void *dst, CUarray a, unsigned int off, unsigned int n, CUstream stream)
{
    return vgpu_remote_guest_cuMemcpyAtoHAsync_v2(dst, a, off, n, stream);
}

static CUDA_MEMCPY2D widened_2d(const CUDA_MEMCPY2D_v1 *c)
{
    return (CUDA_MEMCPY2D){
        .srcXInBytes = c->srcXInBytes,
        .srcY = c->srcY,
        .srcMemoryType = c->srcMemoryType,
        .srcHost = c->srcHost,
        .srcDevice = c->srcDevice,
        .srcArray = c->srcArray,
        .srcPitch = c->srcPitch,
        .dstXInBytes = c->dstXInBytes,
        .dstY = c->dstY,
        .dstMemoryType = c->dstMemoryType,
        .dstHost = c->dstHost,
        .dstDevice = c->dstDevice,
        .dstArray = c->dstArray,
        .dstPitch = c->dstPitch,
        .WidthInBytes = c->WidthInBytes,
        .Height = c->Height,
    };
}

CUresult vgpu_remote_guest_cuMemcpy2D(const CUDA_MEMCPY2D_v1 *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY2D w = widened_2d(c);
    return vgpu_remote_guest_cuMemcpy2D_v2(&w);
}

CUresult vgpu_remote_guest_cuMemcpy2DUnaligned(const CUDA_MEMCPY2D_v1 *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY2D w = widened_2d(c);
    return vgpu_remote_guest_cuMemcpy2DUnaligned_v2(&w);
}

CUresult vgpu_remote_guest_cuMemcpy2DAsync(const CUDA_MEMCPY2D_v1 *c, CUstream stream)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY2D w = widened_2d(c);
    return vgpu_remote_guest_cuMemcpy2DAsync_v2(&w, stream);
}

static CUDA_MEMCPY3D widened_3d(const CUDA_MEMCPY3D_v1 *c)
{
    return (CUDA_MEMCPY3D){ VGPU_REMOTE_COPY_3D_FIELDS(c), .reserved0 = c->reserved0, .reserved1 = c->reserved1 };
}

CUresult vgpu_remote_guest_cuMemcpy3D(const CUDA_MEMCPY3D_v1 *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D w = widened_3d(c);
    return vgpu_remote_guest_cuMemcpy3D_v2(&w);
}

CUresult vgpu_remote_guest_cuMemcpy3DAsync(const CUDA_MEMCPY3D_v1 *c, CUstream stream)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D w = widened_3d(c);
    return vgpu_remote_guest_cuMemcpy3DAsync_v2(&w, stream);
}

CUresult vgpu_remote_guest_cuModuleGetGlobal(CUdeviceptr_v1 *dptr, unsigned int *bytes, CUmodule mod, const char *name)
{
    CUdeviceptr d = 0;
    size_t n = 0;
    CUresult r = VGPU_REMOTE_CUDA(cuModuleGetGlobal_v2)(&d, &n, mod, name);
    if (r != CUDA_SUCCESS)
        return r;
    if (d > UINT32_MAX || n > UINT32_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (dptr)
        *dptr = (CUdeviceptr_v1)d;
    if (bytes)
        *bytes = (unsigned int)n;
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemHostGetDevicePointer(CUdeviceptr_v1 *pdptr, void *p, unsigned int flags)
{
    if (!pdptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr d = 0;
    CUresult r = vgpu_remote_guest_cuMemHostGetDevicePointer_v2(&d, p, flags);
    if (r != CUDA_SUCCESS)
        return r;
    if (d > UINT32_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr_v1)d;
    return CUDA_SUCCESS;
}
