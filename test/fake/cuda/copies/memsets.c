/*
 * Memsets of 8 and 32-bit values, 1D and 2D, synchronous or in a stream's
 * order: done by the host, as copies are (copies.c).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <string.h>

static CUresult set_d8(CUdeviceptr dst, unsigned char v, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!fake_range_ok(dst, n))
        return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)dst, v, n);
    return CUDA_SUCCESS;
}

static CUresult set_d32(CUdeviceptr dst, unsigned int v, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if ((dst & 3) || n > SIZE_MAX / 4 || !fake_range_ok(dst, n * 4))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned int *p = (unsigned int *)(uintptr_t)dst;
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    ENTER();
    fake_timeline_drain_all();
    return set_d8(dstDevice, uc, N);
}

CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N)
{
    ENTER();
    fake_timeline_drain_all();
    return set_d8(dstDevice, uc, N);
}

CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    ENTER();
    fake_timeline_drain_all();
    return set_d32(dstDevice, ui, N);
}

CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    ENTER();
    fake_timeline_drain_all();
    return set_d32(dstDevice, ui, N);
}

CUresult cuMemsetD32(CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N)
{
    ENTER();
    fake_timeline_drain_all();
    return set_d32(dstDevice, ui, N);
}

/* 2D memsets of bytes, row by row. */
CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height)
{
    ENTER();
    fake_timeline_drain_all();
    for (size_t y = 0; y < Height; y++) {
        CUresult r = set_d8(dstDevice + y * dstPitch, uc, Width);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

static CUresult d8_async(int ptsz, CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? set_d8(dst, v, n) : rc;
}

static CUresult d32_async(int ptsz, CUdeviceptr dst, unsigned int v, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? set_d32(dst, v, n) : rc;
}

WITH_PTSZ(cuMemsetD8Async, d8_async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream), dstDevice,
          uc, N, hStream)
WITH_PTSZ(cuMemsetD32Async, d32_async, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream), dstDevice,
          ui, N, hStream)
