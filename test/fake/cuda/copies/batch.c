/*
 * Batches of copies (cuMemcpyBatchAsync, cuMemcpy3DBatchAsync, their _v2
 * and per-thread forms): each copy between unified addresses (device memory
 * the fake handed out, or the host's), or, in a 3D batch, arrays too, done
 * as the fake's stream-ordered copies are (copies.c), in the array's order,
 * which is one of the orders the driver may take.  As the driver's, the
 * whole batch is checked first: its attributes (every copy has one, of a
 * valid source access order), its extents and operands, and a stream that is
 * not the legacy NULL one; the first copy that fails gives its index (the
 * first form's failIdx; SIZE_MAX for an error of the whole batch).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdint.h>
#include <string.h>

/* The legacy stream, which batches refuse (a per-thread form's NULL is the
 * thread's own stream). */
static int legacy_stream(CUstream s, int ptsz)
{
    return s == CU_STREAM_LEGACY || (!s && !ptsz);
}

static int order_ok(CUmemcpySrcAccessOrder o)
{
    return o == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM || o == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL ||
           o == CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
}

/* Where p lies: device memory the fake handed out (1, with [p, p+n) in
 * one allocation, else -1), or the host's (0). */
static int device_side(CUdeviceptr p, size_t n)
{
    const unsigned device = (1u << A_DEVICE) | (1u << A_POOL) | (1u << A_MAPPED) | (1u << A_IPC);
    LOCK();
    struct alloc *a = fake_find_containing_locked((uintptr_t)p, 1, device);
    int in = a && (uintptr_t)p - a->base <= a->size - (n ? n : 1);
    UNLOCK();
    return !a ? 0 : in ? 1 : -1;
}

/* ---- pointer to pointer ---- */

static int attributes_ok(size_t count, const CUmemcpyAttributes *attrs, const size_t *idxs, size_t n)
{
    if (n == 0 || n > count || !attrs || !idxs || idxs[0] != 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (idxs[i] >= count || (i && idxs[i] <= idxs[i - 1]) || !order_ok(attrs[i].srcAccessOrder) ||
            attrs[i].flags > CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE)
            return 0;
    return 1;
}

static CUresult batch(int ptsz, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                      CUmemcpyAttributes *attrs, size_t *idxs, size_t n, size_t *failIdx, CUstream s)
{
    if (failIdx)
        *failIdx = SIZE_MAX;
    if (!fake_stream_of(s, ptsz))
        return CUDA_ERROR_INVALID_HANDLE;
    if (count == 0 || !dsts || !srcs || !sizes || !attributes_ok(count, attrs, idxs, n) || legacy_stream(s, ptsz))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++)
        if (!dsts[i] || !srcs[i] || device_side(dsts[i], sizes[i]) < 0 || device_side(srcs[i], sizes[i]) < 0) {
            if (failIdx)
                *failIdx = i;
            return CUDA_ERROR_INVALID_VALUE;
        }
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++)
        memmove((void *)(uintptr_t)dsts[i], (const void *)(uintptr_t)srcs[i], sizes[i]);
    return rc;
}

static CUresult batch_v1(int ptsz, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                         CUmemcpyAttributes *attrs, size_t *idxs, size_t n, size_t *failIdx, CUstream s)
{
    return batch(ptsz, dsts, srcs, sizes, count, attrs, idxs, n, failIdx, s);
}

static CUresult batch_v2(int ptsz, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                         CUmemcpyAttributes *attrs, size_t *idxs, size_t n, CUstream s)
{
    return batch(ptsz, dsts, srcs, sizes, count, attrs, idxs, n, NULL, s);
}

WITH_PTSZ(cuMemcpyBatchAsync, batch_v1,
          (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
           size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream),
          dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream)
WITH_PTSZ(cuMemcpyBatchAsync_v2, batch_v2,
          (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
           size_t *attrsIdxs, size_t numAttrs, CUstream hStream),
          dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream)

/* ---- 3D: pointers and arrays ---- */

/* An operand as a side of a CUDA_MEMCPY3D, its extent e in elements of elem
 * bytes; 0 when it is not a valid one. */
static int side(const CUmemcpy3DOperand *o, const CUextent3D *e, size_t elem, CUmemorytype *type, const void **host,
                CUdeviceptr *dev, CUarray *array, size_t *x, size_t *y, size_t *z, size_t *pitch, size_t *height)
{
    if (o->type == CU_MEMCPY_OPERAND_TYPE_POINTER) {
        size_t row = o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width;
        size_t layer = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
        if (!o->op.ptr.ptr || row < e->width || layer < e->height)
            return 0;
        *pitch = row * elem;
        *height = layer;
        size_t span = ((e->depth - 1) * layer + e->height - 1) * *pitch + e->width * elem;
        int where = device_side(o->op.ptr.ptr, span);
        if (where < 0)
            return 0;
        *type = where ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        *dev = o->op.ptr.ptr;
        *host = (const void *)(uintptr_t)o->op.ptr.ptr;
        return 1;
    }
    if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
        *type = CU_MEMORYTYPE_ARRAY;
        *array = o->op.array.array;
        *x = o->op.array.offset.x * elem;
        *y = o->op.array.offset.y;
        *z = o->op.array.offset.z;
        return 1;
    }
    return 0;
}

/* An element is a byte between two pointers, else its array's (two
 * arrays' must be the same size); 0 for an operand that is neither. */
static size_t element_size(const CUDA_MEMCPY3D_BATCH_OP *op)
{
    int src = op->src.type == CU_MEMCPY_OPERAND_TYPE_ARRAY, dst = op->dst.type == CU_MEMCPY_OPERAND_TYPE_ARRAY;
    size_t a = src ? fake_array_element(op->src.op.array.array) : 1;
    size_t b = dst ? fake_array_element(op->dst.op.array.array) : 1;
    if (src && dst)
        return a == b ? a : 0;
    return src ? a : b;
}

/* Op as a CUDA_MEMCPY3D, or 0 when it is not a valid copy. */
static int copy_of(const CUDA_MEMCPY3D_BATCH_OP *op, CUDA_MEMCPY3D *c)
{
    size_t elem = element_size(op);
    const CUextent3D *e = &op->extent;
    *c = (CUDA_MEMCPY3D){ .WidthInBytes = e->width * elem, .Height = e->height, .Depth = e->depth };
    const void *dst_host = NULL;
    return elem && e->width && e->height && e->depth && order_ok(op->srcAccessOrder) &&
           op->flags <= CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE &&
           side(&op->src, e, elem, &c->srcMemoryType, &c->srcHost, &c->srcDevice, &c->srcArray, &c->srcXInBytes,
                &c->srcY, &c->srcZ, &c->srcPitch, &c->srcHeight) &&
           side(&op->dst, e, elem, &c->dstMemoryType, &dst_host, &c->dstDevice, &c->dstArray, &c->dstXInBytes, &c->dstY,
                &c->dstZ, &c->dstPitch, &c->dstHeight) &&
           (c->dstHost = (void *)(uintptr_t)dst_host, 1);
}

static CUresult batch_3d(int ptsz, size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *failIdx, unsigned long long flags,
                         CUstream s)
{
    if (failIdx)
        *failIdx = SIZE_MAX;
    if (!fake_stream_of(s, ptsz))
        return CUDA_ERROR_INVALID_HANDLE;
    if (n == 0 || !ops || flags != 0 || legacy_stream(s, ptsz))
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D c;
    for (size_t i = 0; i < n; i++)
        if (!copy_of(&ops[i], &c)) {
            if (failIdx)
                *failIdx = i;
            return CUDA_ERROR_INVALID_VALUE;
        }
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++) {
        copy_of(&ops[i], &c);
        if ((rc = fake_copy_3d(&c)) != CUDA_SUCCESS && failIdx)
            *failIdx = i;
    }
    return rc;
}

static CUresult batch_3d_v1(int ptsz, size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *failIdx, unsigned long long flags,
                            CUstream s)
{
    return batch_3d(ptsz, n, ops, failIdx, flags, s);
}

static CUresult batch_3d_v2(int ptsz, size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags, CUstream s)
{
    return batch_3d(ptsz, n, ops, NULL, flags, s);
}

WITH_PTSZ(cuMemcpy3DBatchAsync, batch_3d_v1,
          (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags, CUstream hStream),
          numOps, opList, failIdx, flags, hStream)
WITH_PTSZ(cuMemcpy3DBatchAsync_v2, batch_3d_v2,
          (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags, CUstream hStream), numOps, opList,
          flags, hStream)
