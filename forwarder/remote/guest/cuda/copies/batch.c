/*
 * Batches of copies (cuMemcpyBatchAsync, cuMemcpy3DBatchAsync), made in the
 * guest as the copies they hold, in order on the stream: each one's own
 * message (cuMemcpyAsync's, between unified addresses, or
 * cuMemcpy3DAsync_v2's), with no message of the batch's.  The driver may
 * run a batch's copies in any order, so in order is one of its orders; an
 * attribute's access order and location hints are hints.  As the
 * driver's, a batch is refused on the legacy NULL stream, and a copy's
 * device side is checked against its allocation before any copy is made;
 * the first copy that fails ends the batch, its index in *failIdx where
 * the caller asks.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

/* The legacy stream, which batches refuse as the driver does (a
 * per-thread form's NULL is the thread's own stream, named by then). */
static bool legacy(CUstream stream)
{
    return !stream || stream == CU_STREAM_LEGACY;
}

/* A batch's attributes: each index within the batch, rising from 0. */
static bool attributes_ok(size_t count, const CUmemcpyAttributes *attrs, const size_t *idxs, size_t n)
{
    if (n == 0 || !attrs || !idxs || idxs[0] != 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (idxs[i] >= count || (i && idxs[i] <= idxs[i - 1]) ||
            attrs[i].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_INVALID)
            return false;
    return true;
}

/* Whether n bytes at p lie in the allocation p is in, where p is the GPU's
 * (an address the executor's driver knows; the guest's own memory is the
 * copy's to check).  The driver checks a batch whole before it copies, so
 * the copy that fails is the one whose range does not fit, which a copy
 * sent without waiting (device to device) would say only later. */
static bool fits(CUdeviceptr p, size_t n)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    if (!p || VGPU_REMOTE_CUDA(cuMemGetAddressRange_v2)(&base, &size, p) != CUDA_SUCCESS)
        return true;
    return p - base <= size && n <= size - (p - base);
}

static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
                      size_t *idxs, size_t n, size_t *failIdx, CUstream stream)
{
    if (failIdx)
        *failIdx = SIZE_MAX;
    if (count == 0 || !dsts || !srcs || !sizes || !attributes_ok(count, attrs, idxs, n) || legacy(stream))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++)
        if (!fits(dsts[i], sizes[i]) || !fits(srcs[i], sizes[i])) {
            if (failIdx)
                *failIdx = i;
            return CUDA_ERROR_INVALID_VALUE;
        }
    for (size_t i = 0; i < count; i++) {
        CUresult r = vgpu_remote_guest_cuMemcpyAsync(dsts[i], srcs[i], sizes[i], stream);
        if (r != CUDA_SUCCESS) {
            if (failIdx)
                *failIdx = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                              CUmemcpyAttributes *attrs, size_t *idxs, size_t n, size_t *failIdx,
                                              CUstream stream)
{
    return batch(dsts, srcs, sizes, count, attrs, idxs, n, failIdx, stream);
}

CUresult vgpu_remote_guest_cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                                   CUmemcpyAttributes *attrs, size_t *idxs, size_t n, size_t *failIdx,
                                                   CUstream stream)
{
    return batch(dsts, srcs, sizes, count, attrs, idxs, n, failIdx, vgpu_remote_per_thread(stream));
}

CUresult vgpu_remote_guest_cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                                 CUmemcpyAttributes *attrs, size_t *idxs, size_t n, CUstream stream)
{
    return batch(dsts, srcs, sizes, count, attrs, idxs, n, NULL, stream);
}

CUresult vgpu_remote_guest_cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                                      CUmemcpyAttributes *attrs, size_t *idxs, size_t n,
                                                      CUstream stream)
{
    return batch(dsts, srcs, sizes, count, attrs, idxs, n, NULL, vgpu_remote_per_thread(stream));
}

/* The bytes of one element of array a (its format's, times its channels),
 * or 0 for a format whose elements are not whole bytes each. */
static size_t element_of(CUarray a)
{
    CUDA_ARRAY3D_DESCRIPTOR d;
    if (VGPU_REMOTE_CUDA(cuArray3DGetDescriptor_v2)(&d, a) != CUDA_SUCCESS)
        return 0;
    switch (d.Format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return d.NumChannels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2 * (size_t)d.NumChannels;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4 * (size_t)d.NumChannels;
    default: return 0;
    }
}

/* One side of a 3D batch copy as a CUDA_MEMCPY3D's, its extents in bytes
 * (elements of elem bytes): memory at a unified address, its rows
 * rowLength elements apart and its layers layerHeight rows (0: the
 * extent's), or an array at an offset. */
static bool side(const CUmemcpy3DOperand *o, const CUextent3D *e, size_t elem, CUmemorytype *type, CUdeviceptr *dev,
                 CUarray *array, size_t *x, size_t *y, size_t *z, size_t *pitch, size_t *height)
{
    if (o->type == CU_MEMCPY_OPERAND_TYPE_POINTER) {
        *type = CU_MEMORYTYPE_UNIFIED;
        *dev = o->op.ptr.ptr;
        *pitch = (o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width) * elem;
        *height = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
        return true;
    }
    if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
        *type = CU_MEMORYTYPE_ARRAY;
        *array = o->op.array.array;
        *x = o->op.array.offset.x * elem;
        *y = o->op.array.offset.y;
        *z = o->op.array.offset.z;
        return true;
    }
    return false;
}

/* An element is a byte between two pointers, else the array's (the
 * driver's rule; two arrays' must be the same). */
static size_t element_size(const CUDA_MEMCPY3D_BATCH_OP *op)
{
    bool src = op->src.type == CU_MEMCPY_OPERAND_TYPE_ARRAY, dst = op->dst.type == CU_MEMCPY_OPERAND_TYPE_ARRAY;
    size_t a = src ? element_of(op->src.op.array.array) : 1, b = dst ? element_of(op->dst.op.array.array) : 1;
    if (src && dst)
        return a == b ? a : 0;
    return src ? a : b;
}

static CUresult batch_3d(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *failIdx, unsigned long long flags,
                         CUstream stream)
{
    if (failIdx)
        *failIdx = SIZE_MAX;
    if (n == 0 || !ops || flags != 0 || legacy(stream))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++) {
        const CUDA_MEMCPY3D_BATCH_OP *op = &ops[i];
        size_t elem = element_size(op);
        CUDA_MEMCPY3D c = { .WidthInBytes = op->extent.width * elem,
                            .Height = op->extent.height,
                            .Depth = op->extent.depth };
        CUresult r = CUDA_ERROR_INVALID_VALUE;
        if (elem && op->srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_INVALID && op->extent.width && op->extent.height &&
            op->extent.depth &&
            side(&op->src, &op->extent, elem, &c.srcMemoryType, &c.srcDevice, &c.srcArray, &c.srcXInBytes, &c.srcY,
                 &c.srcZ, &c.srcPitch, &c.srcHeight) &&
            side(&op->dst, &op->extent, elem, &c.dstMemoryType, &c.dstDevice, &c.dstArray, &c.dstXInBytes, &c.dstY,
                 &c.dstZ, &c.dstPitch, &c.dstHeight))
            r = vgpu_remote_guest_cuMemcpy3DAsync_v2(&c, stream);
        if (r != CUDA_SUCCESS) {
            if (failIdx)
                *failIdx = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *failIdx,
                                                unsigned long long flags, CUstream stream)
{
    return batch_3d(n, ops, failIdx, flags, stream);
}

CUresult vgpu_remote_guest_cuMemcpy3DBatchAsync_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *failIdx,
                                                     unsigned long long flags, CUstream stream)
{
    return batch_3d(n, ops, failIdx, flags, vgpu_remote_per_thread(stream));
}

CUresult vgpu_remote_guest_cuMemcpy3DBatchAsync_v2(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                                                   CUstream stream)
{
    return batch_3d(n, ops, NULL, flags, stream);
}

CUresult vgpu_remote_guest_cuMemcpy3DBatchAsync_v2_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                                                        CUstream stream)
{
    return batch_3d(n, ops, NULL, flags, vgpu_remote_per_thread(stream));
}
