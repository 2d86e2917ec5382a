/*
 * Tensor maps, the guest's side (the executor's: forwarder/remote/executor/cuda/
 * tensor_map.c; what crosses: docs/design/remote.md): the descriptors of tensors
 * in device memory that Hopper's TMA units copy tiles of, which kernels
 * take as parameters.  The driver encodes them on the host from plain
 * values and arrays; they cross as words, the 128-byte descriptor back.
 *
 * A request: [data type][rank][global address][interleave][swizzle]
 * [L2 promotion][out-of-bounds fill], the kind's own words (im2col: channels
 * per pixel, pixels per column; im2col wide: the box's lower and upper
 * width, then those two, then the mode), then the arrays as words: the
 * global dimensions (rank), the global strides (rank - 1), the kind's own
 * (tiled: the box's dimensions, rank; im2col: the box's lower and upper
 * corners, rank - 2 each) and the element strides (rank).
 */
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/transport/wire.h"

#include "vgpu_cuda_slots.h"

#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name
#define MAX_WORDS (12 + 6 * VGPU_REMOTE_TENSOR_RANK)

struct encoding {
    CUtensorMapDataType type;
    cuuint32_t rank;
    void *address;
    const cuuint64_t *dim, *strides;
    const cuuint32_t *element_strides;
    CUtensorMapInterleave interleave;
    CUtensorMapSwizzle swizzle;
    CUtensorMapL2promotion l2;
    CUtensorMapFloatOOBfill oob;
};

static CUresult encode(unsigned slot, CUtensorMap *map, const struct encoding *e, const uint64_t *own, unsigned nown,
                       const void *arrays, unsigned narrays, bool array_is_int, unsigned min_rank)
{
    if (!map || !e->dim || !e->element_strides || (e->rank > 1 && !e->strides) || (narrays && !arrays))
        return CUDA_ERROR_INVALID_VALUE;
    if (e->rank < min_rank || e->rank > VGPU_REMOTE_TENSOR_RANK)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t w[MAX_WORDS];
    unsigned n = 0;
    uint64_t head[7] = { e->type, e->rank, (uint64_t)(uintptr_t)e->address, e->interleave, e->swizzle, e->l2, e->oob };
    for (unsigned i = 0; i < 7; i++)
        w[n++] = head[i];
    for (unsigned i = 0; i < nown; i++)
        w[n++] = own[i];
    for (unsigned i = 0; i < e->rank; i++)
        w[n++] = e->dim[i];
    for (unsigned i = 0; i + 1 < e->rank; i++)
        w[n++] = e->strides[i];
    for (unsigned i = 0; i < narrays; i++)
        w[n++] = array_is_int ? (uint64_t)(int64_t)((const int *)arrays)[i] : ((const cuuint32_t *)arrays)[i];
    for (unsigned i = 0; i < e->rank; i++)
        w[n++] = e->element_strides[i];
    CUtensorMap out;
    size_t got = 0;
    struct iovec q = { w, n * sizeof(uint64_t) }, a = { &out, sizeof(out) };
    CUresult r = (CUresult)vgpu_remote_call(slot, &q, 1, &a, 1, &got);
    if (r == CUDA_SUCCESS && got != sizeof(out))
        r = CUDA_ERROR_UNKNOWN;
    if (r == CUDA_SUCCESS)
        memcpy(map, &out, sizeof(out));
    return r;
}

CUresult vgpu_remote_guest_cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                                  void *address, const cuuint64_t *dim, const cuuint64_t *strides,
                                                  const cuuint32_t *box, const cuuint32_t *element_strides,
                                                  CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                                  CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    struct encoding e = { type, rank, address, dim, strides, element_strides, interleave, swizzle, l2, oob };
    return encode(SLOT(cuTensorMapEncodeTiled), map, &e, NULL, 0, box, rank, false, 1);
}

CUresult vgpu_remote_guest_cuTensorMapEncodeIm2col(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                                   void *address, const cuuint64_t *dim, const cuuint64_t *strides,
                                                   const int *lower, const int *upper, cuuint32_t channels,
                                                   cuuint32_t pixels, const cuuint32_t *element_strides,
                                                   CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                                   CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    if (!lower || !upper || rank < 3 || rank > VGPU_REMOTE_TENSOR_RANK)
        return CUDA_ERROR_INVALID_VALUE;
    int corners[2 * (VGPU_REMOTE_TENSOR_RANK - 2)];
    memcpy(corners, lower, (rank - 2) * sizeof(int));
    memcpy(corners + rank - 2, upper, (rank - 2) * sizeof(int));
    struct encoding e = { type, rank, address, dim, strides, element_strides, interleave, swizzle, l2, oob };
    const uint64_t own[2] = { channels, pixels };
    return encode(SLOT(cuTensorMapEncodeIm2col), map, &e, own, 2, corners, 2 * (rank - 2), true, 3);
}

CUresult vgpu_remote_guest_cuTensorMapEncodeIm2colWide(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                                       void *address, const cuuint64_t *dim, const cuuint64_t *strides,
                                                       int lower, int upper, cuuint32_t channels, cuuint32_t pixels,
                                                       const cuuint32_t *element_strides,
                                                       CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
                                                       CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                                       CUtensorMapFloatOOBfill oob)
{
    struct encoding e = { type, rank, address, dim, strides, element_strides, interleave, swizzle, l2, oob };
    const uint64_t own[5] = { (uint64_t)(int64_t)lower, (uint64_t)(int64_t)upper, channels, pixels, mode };
    return encode(SLOT(cuTensorMapEncodeIm2colWide), map, &e, own, 5, NULL, 0, false, 3);
}

/* [address] and the map; the map back. */
CUresult vgpu_remote_guest_cuTensorMapReplaceAddress(CUtensorMap *map, void *address)
{
    if (!map)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t w = (uint64_t)(uintptr_t)address;
    CUtensorMap out;
    size_t got = 0;
    struct iovec q[2] = { { &w, sizeof(w) }, { map, sizeof(*map) } }, a = { &out, sizeof(out) };
    CUresult r = (CUresult)vgpu_remote_call(SLOT(cuTensorMapReplaceAddress), q, 2, &a, 1, &got);
    if (r == CUDA_SUCCESS && got != sizeof(out))
        r = CUDA_ERROR_UNKNOWN;
    if (r == CUDA_SUCCESS)
        memcpy(map, &out, sizeof(out));
    return r;
}
