/* 2D copies (cuMemcpy2D*): a layer of a 3D copy, whose sides may be arrays. */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

/* A 2D copy is a 3D copy of one layer (copies_3d.c). */
static CUresult copy_2d(const CUDA_MEMCPY2D *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D d = { .srcXInBytes = c->srcXInBytes, .srcY = c->srcY, .srcMemoryType = c->srcMemoryType,
                        .srcHost = c->srcHost, .srcDevice = c->srcDevice, .srcArray = c->srcArray,
                        .srcPitch = c->srcPitch, .dstXInBytes = c->dstXInBytes, .dstY = c->dstY,
                        .dstMemoryType = c->dstMemoryType, .dstHost = c->dstHost, .dstDevice = c->dstDevice,
                        .dstArray = c->dstArray, .dstPitch = c->dstPitch, .WidthInBytes = c->WidthInBytes,
                        .Height = c->Height, .Depth = 1 };
    return fake_copy_3d(&d);
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_2d(pCopy);
}

CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_2d(pCopy);
}

static CUresult copy_2d_async(int ptsz, const CUDA_MEMCPY2D *c, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? copy_2d(c) : rc;
}

WITH_PTSZ(cuMemcpy2DAsync_v2, copy_2d_async, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), pCopy, hStream)
