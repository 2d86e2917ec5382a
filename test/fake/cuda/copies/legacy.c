/*
 * The 32-bit copies of CUDA 3.x (cuMemcpyHtoD, cuMemcpy2D, cuMemcpy3D, the
 * array copies, ...), which programs built before the _v2 names call: each
 * widened into its _v2 form's copy, as the driver widens them, its 32-bit
 * device address zero-extended (so that only memory below 4 GiB, the legacy
 * cuMemAlloc's, is reachable through them).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return fake_copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return fake_copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return fake_copy_dtod(dstDevice, srcDevice, ByteCount);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount, CUstream hStream)
{
    ENTER();
    CUresult rc = fake_stream_before_host_op(hStream, 0);
    return rc == CUDA_SUCCESS ? fake_copy_htod(dstDevice, srcHost, ByteCount) : rc;
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream)
{
    ENTER();
    CUresult rc = fake_stream_before_host_op(hStream, 0);
    return rc == CUDA_SUCCESS ? fake_copy_dtoh(dstHost, srcDevice, ByteCount) : rc;
}

/* ---- an array and host memory: ByteCount bytes from an offset in its bytes ---- */

CUresult cuMemcpyHtoA(CUarray dstArray, unsigned int dstOffset, const void *srcHost, unsigned int ByteCount)
{
    ENTER();
    if (!srcHost && ByteCount)
        return CUDA_ERROR_INVALID_VALUE;
    fake_timeline_drain_all();
    return fake_copy_htoa(dstArray, dstOffset, srcHost, ByteCount);
}

CUresult cuMemcpyAtoH(void *dstHost, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount)
{
    ENTER();
    if (!dstHost && ByteCount)
        return CUDA_ERROR_INVALID_VALUE;
    fake_timeline_drain_all();
    return fake_copy_atoh(dstHost, srcArray, srcOffset, ByteCount);
}

CUresult cuMemcpyHtoAAsync(CUarray dstArray, unsigned int dstOffset, const void *srcHost, unsigned int ByteCount,
                           CUstream hStream)
{
    ENTER();
    if (!srcHost && ByteCount)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = fake_stream_before_host_op(hStream, 0);
    return rc == CUDA_SUCCESS ? fake_copy_htoa(dstArray, dstOffset, srcHost, ByteCount) : rc;
}

CUresult cuMemcpyAtoHAsync(void *dstHost, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount,
                           CUstream hStream)
{
    ENTER();
    if (!dstHost && ByteCount)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = fake_stream_before_host_op(hStream, 0);
    return rc == CUDA_SUCCESS ? fake_copy_atoh(dstHost, srcArray, srcOffset, ByteCount) : rc;
}

/* ---- 2D and 3D copies: the 32-bit descriptions widened ---- */

static CUDA_MEMCPY3D widened_2d(const CUDA_MEMCPY2D_v1 *c)
{
    return (CUDA_MEMCPY3D){ .srcXInBytes = c->srcXInBytes,
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
                            .Depth = 1 };
}

static CUDA_MEMCPY3D widened_3d(const CUDA_MEMCPY3D_v1 *c)
{
    return (CUDA_MEMCPY3D){ .srcXInBytes = c->srcXInBytes,
                            .srcY = c->srcY,
                            .srcZ = c->srcZ,
                            .srcLOD = c->srcLOD,
                            .srcMemoryType = c->srcMemoryType,
                            .srcHost = c->srcHost,
                            .srcDevice = c->srcDevice,
                            .srcArray = c->srcArray,
                            .srcPitch = c->srcPitch,
                            .srcHeight = c->srcHeight,
                            .dstXInBytes = c->dstXInBytes,
                            .dstY = c->dstY,
                            .dstZ = c->dstZ,
                            .dstLOD = c->dstLOD,
                            .dstMemoryType = c->dstMemoryType,
                            .dstHost = c->dstHost,
                            .dstDevice = c->dstDevice,
                            .dstArray = c->dstArray,
                            .dstPitch = c->dstPitch,
                            .dstHeight = c->dstHeight,
                            .WidthInBytes = c->WidthInBytes,
                            .Height = c->Height,
                            .Depth = c->Depth };
}

static CUresult copy_2d(const CUDA_MEMCPY2D_v1 *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D w = widened_2d(c);
    return fake_copy_3d(&w);
}

static CUresult copy_3d(const CUDA_MEMCPY3D_v1 *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D w = widened_3d(c);
    return fake_copy_3d(&w);
}

CUresult cuMemcpy2D(const CUDA_MEMCPY2D_v1 *pCopy)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_2d(pCopy);
}

CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D_v1 *pCopy)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_2d(pCopy);
}

CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D_v1 *pCopy, CUstream hStream)
{
    ENTER();
    CUresult rc = fake_stream_before_host_op(hStream, 0);
    return rc == CUDA_SUCCESS ? copy_2d(pCopy) : rc;
}

CUresult cuMemcpy3D(const CUDA_MEMCPY3D_v1 *pCopy)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_3d(pCopy);
}

CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D_v1 *pCopy, CUstream hStream)
{
    ENTER();
    CUresult rc = fake_stream_before_host_op(hStream, 0);
    return rc == CUDA_SUCCESS ? copy_3d(pCopy) : rc;
}
