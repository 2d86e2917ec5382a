/*
 * Copies: device pointers are host addresses, so a copy is a memcpy of a
 * checked range, done by the host when called.
 *
 * The synchronous ones wait for everything queued on the devices first (the
 * legacy stream they run on waits for every other stream).  The 32-bit
 * forms of CUDA 3.x are legacy.c's. */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <string.h>

CUresult fake_copy_htod(CUdeviceptr dst, const void *src, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!src || !fake_range_ok(dst, n))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}

CUresult fake_copy_dtoh(void *dst, CUdeviceptr src, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!dst || !fake_range_ok(src, n))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

CUresult fake_copy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!fake_range_ok(dst, n) || !fake_range_ok(src, n))
        return CUDA_ERROR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return fake_copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return fake_copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return fake_copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return fake_copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return fake_copy_dtod(dstDevice, srcDevice, ByteCount);
}

/* Unified addressing: either side may be host memory. */
static CUresult copy_any(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_any(dst, src, ByteCount);
}

/* Stream-ordered copies and memsets are done by the host at once, after
 * what their stream queued before them: later work on the stream is queued
 * after the call returns, so stream order holds. */
static CUresult htod_async(int ptsz, CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? fake_copy_htod(dst, src, n) : rc;
}

static CUresult dtoh_async(int ptsz, void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? fake_copy_dtoh(dst, src, n) : rc;
}

static CUresult dtod_async(int ptsz, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? fake_copy_dtod(dst, src, n) : rc;
}

static CUresult any_async(int ptsz, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? copy_any(dst, src, n) : rc;
}

WITH_PTSZ(cuMemcpyHtoDAsync_v2, htod_async,
          (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream), dstDevice, srcHost,
          ByteCount, hStream)
WITH_PTSZ(cuMemcpyDtoHAsync_v2, dtoh_async, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
          dstHost, srcDevice, ByteCount, hStream)
WITH_PTSZ(cuMemcpyDtoDAsync_v2, dtod_async,
          (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), dstDevice, srcDevice,
          ByteCount, hStream)
WITH_PTSZ(cuMemcpyAsync, any_async, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream), dst, src,
          ByteCount, hStream)
