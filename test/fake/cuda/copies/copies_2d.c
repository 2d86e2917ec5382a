#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <string.h>

/* 2D copies between host memory and device addresses, row by row; arrays
 * and unified addresses are not emulated (CUDA_ERROR_NOT_SUPPORTED).  A
 * pitch shorter than the width is refused, as the driver refuses it. */
static CUresult copy_2d(const CUDA_MEMCPY2D *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c->WidthInBytes || !c->Height)
        return CUDA_SUCCESS;
    int sh = c->srcMemoryType == CU_MEMORYTYPE_HOST, dh = c->dstMemoryType == CU_MEMORYTYPE_HOST;
    if ((!sh && c->srcMemoryType != CU_MEMORYTYPE_DEVICE) || (!dh && c->dstMemoryType != CU_MEMORYTYPE_DEVICE))
        return CUDA_ERROR_NOT_SUPPORTED;
    if (c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t y = 0; y < c->Height; y++) {
        size_t so = (c->srcY + y) * c->srcPitch + c->srcXInBytes, d = (c->dstY + y) * c->dstPitch + c->dstXInBytes;
        const char *sp = sh ? (const char *)c->srcHost + so : NULL;
        char *dp = dh ? (char *)c->dstHost + d : NULL;
        CUresult r;
        if (sh && dh)
            r = (memmove(dp, sp, c->WidthInBytes), CUDA_SUCCESS);
        else if (sh)
            r = fake_copy_htod(c->dstDevice + d, sp, c->WidthInBytes);
        else if (dh)
            r = fake_copy_dtoh(dp, c->srcDevice + so, c->WidthInBytes);
        else
            r = fake_copy_dtod(c->dstDevice + d, c->srcDevice + so, c->WidthInBytes);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
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
