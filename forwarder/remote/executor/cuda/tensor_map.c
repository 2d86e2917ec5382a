/*
 * Tensor maps, which kernels take, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/tensor_map.c; what crosses: docs/design/remote.md).
 * A map is encoded from plain values; no address in it is read.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include "forwarder/remote/transport/wire.h"

#include <string.h>

enum map_kind { TILED, IM2COL, IM2COL_WIDE };

/* A descriptor encoded from plain values: the driver reads the arrays and
 * writes the 128 bytes, which go back; no address in them is read. */
static int encode(struct vgpu_exec *x, void *fn, const void *req, size_t len, enum map_kind kind, const char *call)
{
    static const unsigned own_words[] = { [TILED] = 0, [IM2COL] = 2, [IM2COL_WIDE] = 5 };
    unsigned own = own_words[kind];
    if (len < (7 + own) * 8)
        return vgpu_exec_malformed(call, len);
    uint64_t rank = vgpu_exec_word(req, 1);
    if (rank < (kind == TILED ? 1 : 3) || rank > VGPU_REMOTE_TENSOR_RANK)
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    unsigned kind_arrays = kind == TILED ? (unsigned)rank : kind == IM2COL ? 2 * ((unsigned)rank - 2) : 0;
    unsigned words = 7 + own + (unsigned)rank + ((unsigned)rank - 1) + kind_arrays + (unsigned)rank;
    if (len != words * 8)
        return vgpu_exec_malformed(call, len);
    cuuint64_t dim[VGPU_REMOTE_TENSOR_RANK], strides[VGPU_REMOTE_TENSOR_RANK];
    cuuint32_t box[VGPU_REMOTE_TENSOR_RANK], element_strides[VGPU_REMOTE_TENSOR_RANK];
    int corners[2 * VGPU_REMOTE_TENSOR_RANK];
    unsigned at = 7 + own;
    for (unsigned i = 0; i < rank; i++)
        dim[i] = vgpu_exec_word(req, at++);
    for (unsigned i = 0; i + 1 < rank; i++)
        strides[i] = vgpu_exec_word(req, at++);
    for (unsigned i = 0; i < kind_arrays; i++) {
        uint64_t v = vgpu_exec_word(req, at++);
        if (kind == TILED)
            box[i] = (cuuint32_t)v;
        else
            corners[i] = (int)(int64_t)v;
    }
    for (unsigned i = 0; i < rank; i++)
        element_strides[i] = (cuuint32_t)vgpu_exec_word(req, at++);
    CUtensorMap map;
    memset(&map, 0, sizeof(map));
    CUtensorMapDataType type = (CUtensorMapDataType)vgpu_exec_word(req, 0);
    void *address = (void *)(uintptr_t)vgpu_exec_word(req, 2);
    CUtensorMapInterleave interleave = (CUtensorMapInterleave)vgpu_exec_word(req, 3);
    CUtensorMapSwizzle swizzle = (CUtensorMapSwizzle)vgpu_exec_word(req, 4);
    CUtensorMapL2promotion l2 = (CUtensorMapL2promotion)vgpu_exec_word(req, 5);
    CUtensorMapFloatOOBfill oob = (CUtensorMapFloatOOBfill)vgpu_exec_word(req, 6);
    CUresult r;
    if (kind == TILED)
        r = ((__typeof__(&cuTensorMapEncodeTiled))fn)(&map, type, (cuuint32_t)rank, address, dim, strides, box,
                                                      element_strides, interleave, swizzle, l2, oob);
    else if (kind == IM2COL)
        r = ((__typeof__(&cuTensorMapEncodeIm2col))fn)(&map, type, (cuuint32_t)rank, address, dim, strides, corners,
                                                       corners + rank - 2, (cuuint32_t)vgpu_exec_word(req, 7),
                                                       (cuuint32_t)vgpu_exec_word(req, 8), element_strides, interleave,
                                                       swizzle, l2, oob);
    else
        r = ((__typeof__(&cuTensorMapEncodeIm2colWide))fn)(
            &map, type, (cuuint32_t)rank, address, dim, strides, (int)(int64_t)vgpu_exec_word(req, 7),
            (int)(int64_t)vgpu_exec_word(req, 8), (cuuint32_t)vgpu_exec_word(req, 9),
            (cuuint32_t)vgpu_exec_word(req, 10), element_strides, interleave,
            (CUtensorMapIm2ColWideMode)vgpu_exec_word(req, 11), swizzle, l2, oob);
    struct iovec v = { &map, r == CUDA_SUCCESS ? sizeof(map) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}

int vgpu_exec_cuTensorMapEncodeTiled(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return encode(x, fn, req, len, TILED, "cuTensorMapEncodeTiled");
}

int vgpu_exec_cuTensorMapEncodeIm2col(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return encode(x, fn, req, len, IM2COL, "cuTensorMapEncodeIm2col");
}

int vgpu_exec_cuTensorMapEncodeIm2colWide(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return encode(x, fn, req, len, IM2COL_WIDE, "cuTensorMapEncodeIm2colWide");
}

/* [address] and a map of the guest's: the map back with the address in it. */
int vgpu_exec_cuTensorMapReplaceAddress(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    CUtensorMap map;
    if (len != 8 + sizeof(map))
        return vgpu_exec_malformed("cuTensorMapReplaceAddress", len);
    memcpy(&map, (const char *)req + 8, sizeof(map));
    CUresult r = ((CUresult(*)(CUtensorMap *, void *))fn)(&map, (void *)(uintptr_t)vgpu_exec_word(req, 0));
    struct iovec v = { &map, r == CUDA_SUCCESS ? sizeof(map) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}
