/*
 * 3D and 2D copies, and copies to and from arrays: each side host memory,
 * a device address or an array (its bytes: memory/arrays.c), row by row.
 * A side's extent is checked: a device range against the allocations
 * (fake_copy_*), an array's against its rows, layers and row length.
 * Unified addresses and mipmap levels are not emulated
 * (CUDA_ERROR_NOT_SUPPORTED).  A pitch shorter than the width is refused,
 * as the driver refuses it.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <string.h>

/* One side of a copy. */
struct side {
    CUmemorytype type;
    const char *host;   /* HOST, or ARRAY: its bytes */
    CUdeviceptr device; /* DEVICE */
    size_t x, y, z, pitch, height;
    size_t rows, layers; /* ARRAY: its extent */
};

static CUresult side_of(struct side *s, CUmemorytype type, const void *host, CUdeviceptr device, CUarray array,
                        size_t x, size_t y, size_t z, size_t lod, size_t pitch, size_t height)
{
    *s = (struct side){ .type = type, .host = host, .device = device, .x = x, .y = y, .z = z, .pitch = pitch,
                        .height = height };
    if (lod)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (type == CU_MEMORYTYPE_ARRAY) {
        size_t row;
        s->host = (const char *)fake_array_bytes(array, &row, &s->rows, &s->layers);
        if (!s->host)
            return CUDA_ERROR_INVALID_HANDLE;
        s->pitch = row;
        s->height = s->rows;
        return CUDA_SUCCESS;
    }
    return type == CU_MEMORYTYPE_HOST || type == CU_MEMORYTYPE_DEVICE ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
}

/* Whether width bytes of rows height and layers depth from (x, y, z) lie in
 * the array. */
static int in_array(const struct side *s, size_t width, size_t height, size_t depth)
{
    return s->x <= s->pitch && width <= s->pitch - s->x && s->y <= s->rows && height <= s->rows - s->y &&
           s->z <= s->layers && depth <= s->layers - s->z;
}

static CUresult copy_row(const struct side *src, size_t so, const struct side *dst, size_t d, size_t n)
{
    int from_device = src->type == CU_MEMORYTYPE_DEVICE, to_device = dst->type == CU_MEMORYTYPE_DEVICE;
    if (from_device && to_device)
        return fake_copy_dtod(dst->device + d, src->device + so, n);
    if (from_device)
        return fake_copy_dtoh((char *)dst->host + d, src->device + so, n);
    if (to_device)
        return fake_copy_htod(dst->device + d, src->host + so, n);
    memmove((char *)dst->host + d, src->host + so, n);
    return CUDA_SUCCESS;
}

CUresult fake_copy_3d(const CUDA_MEMCPY3D *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    struct side src, dst;
    CUresult r = side_of(&src, c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY,
                         c->srcZ, c->srcLOD, c->srcPitch, c->srcHeight);
    if (r == CUDA_SUCCESS)
        r = side_of(&dst, c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY, c->dstZ,
                    c->dstLOD, c->dstPitch, c->dstHeight);
    if (r != CUDA_SUCCESS)
        return r;
    size_t width = c->WidthInBytes, height = c->Height, depth = c->Depth ? c->Depth : 1;
    if (!width || !height)
        return CUDA_SUCCESS;
    if (src.pitch < width || dst.pitch < width || (depth > 1 && (src.height < height || dst.height < height)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((src.type == CU_MEMORYTYPE_ARRAY && !in_array(&src, width, height, depth)) ||
        (dst.type == CU_MEMORYTYPE_ARRAY && !in_array(&dst, width, height, depth)))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < height; y++) {
            size_t so = ((src.z + z) * src.height + src.y + y) * src.pitch + src.x;
            size_t d = ((dst.z + z) * dst.height + dst.y + y) * dst.pitch + dst.x;
            if ((r = copy_row(&src, so, &dst, d, width)) != CUDA_SUCCESS)
                return r;
        }
    return CUDA_SUCCESS;
}

CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy)
{
    ENTER();
    fake_timeline_drain_all();
    return fake_copy_3d(pCopy);
}

CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy)
{
    return cuMemcpy3D_v2(pCopy);
}

static CUresult copy_3d_async(int ptsz, const CUDA_MEMCPY3D *c, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? fake_copy_3d(c) : rc;
}

WITH_PTSZ(cuMemcpy3DAsync_v2, copy_3d_async, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), pCopy, hStream)

/* ---- an array and linear memory: ByteCount bytes from an offset in its bytes ---- */

/* One side of a linear copy of n bytes: a device address, or host bytes
 * (an array's from off, within its bytes). */
static CUresult linear_side(CUmemorytype t, const void *h, CUdeviceptr d, CUarray a, size_t off, size_t n,
                            struct side *s)
{
    *s = (struct side){ .type = t, .host = h, .device = d };
    if (t != CU_MEMORYTYPE_ARRAY)
        return CUDA_SUCCESS;
    size_t row, rows, layers;
    const unsigned char *bytes = fake_array_bytes(a, &row, &rows, &layers);
    if (!bytes)
        return CUDA_ERROR_INVALID_HANDLE;
    size_t total = row * rows * layers;
    if (off > total || n > total - off)
        return CUDA_ERROR_INVALID_VALUE;
    s->type = CU_MEMORYTYPE_HOST;
    s->host = (const char *)bytes + off;
    return CUDA_SUCCESS;
}

static CUresult linear(CUmemorytype st, const void *sh, CUdeviceptr sd, CUarray sa, size_t soff, CUmemorytype dt,
                       void *dh, CUdeviceptr dd, CUarray da, size_t doff, size_t n)
{
    struct side src, dst;
    CUresult r = linear_side(st, sh, sd, sa, soff, n, &src);
    if (r == CUDA_SUCCESS)
        r = linear_side(dt, dh, dd, da, doff, n, &dst);
    return r == CUDA_SUCCESS ? copy_row(&src, 0, &dst, 0, n) : r;
}

CUresult fake_copy_htoa(CUarray a, size_t off, const void *src, size_t n)
{
    return linear(CU_MEMORYTYPE_HOST, src, 0, NULL, 0, CU_MEMORYTYPE_ARRAY, NULL, 0, a, off, n);
}

CUresult fake_copy_atoh(void *dst, CUarray a, size_t off, size_t n)
{
    return linear(CU_MEMORYTYPE_ARRAY, NULL, 0, a, off, CU_MEMORYTYPE_HOST, dst, 0, NULL, 0, n);
}

CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return linear(CU_MEMORYTYPE_HOST, srcHost, 0, NULL, 0, CU_MEMORYTYPE_ARRAY, NULL, 0, dstArray, dstOffset,
                  ByteCount);
}

CUresult cuMemcpyAtoH_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return linear(CU_MEMORYTYPE_ARRAY, NULL, 0, srcArray, srcOffset, CU_MEMORYTYPE_HOST, dstHost, 0, NULL, 0,
                  ByteCount);
}

CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return linear(CU_MEMORYTYPE_ARRAY, NULL, 0, srcArray, srcOffset, CU_MEMORYTYPE_DEVICE, NULL, dstDevice, NULL, 0,
                  ByteCount);
}

CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return linear(CU_MEMORYTYPE_DEVICE, NULL, srcDevice, NULL, 0, CU_MEMORYTYPE_ARRAY, NULL, 0, dstArray, dstOffset,
                  ByteCount);
}

CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return linear(CU_MEMORYTYPE_ARRAY, NULL, 0, srcArray, srcOffset, CU_MEMORYTYPE_ARRAY, NULL, 0, dstArray,
                  dstOffset, ByteCount);
}

static CUresult htoa_async(int ptsz, CUarray a, size_t off, const void *h, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? linear(CU_MEMORYTYPE_HOST, h, 0, NULL, 0, CU_MEMORYTYPE_ARRAY, NULL, 0, a, off, n) : rc;
}

static CUresult atoh_async(int ptsz, void *h, CUarray a, size_t off, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? linear(CU_MEMORYTYPE_ARRAY, NULL, 0, a, off, CU_MEMORYTYPE_HOST, h, 0, NULL, 0, n) : rc;
}

WITH_PTSZ(cuMemcpyHtoAAsync_v2, htoa_async,
          (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount, CUstream hStream), dstArray,
          dstOffset, srcHost, ByteCount, hStream)
WITH_PTSZ(cuMemcpyAtoHAsync_v2, atoh_async,
          (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream), dstHost, srcArray,
          srcOffset, ByteCount, hStream)
