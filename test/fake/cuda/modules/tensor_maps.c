#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdint.h>
#include <string.h>

/* Tensor maps: the fake's "encoding" packs what it was given into the
 * descriptor's words (the address, then a word per value and array element,
 * until the 16 are full), so that two encodings of the same values are the
 * same and of different ones differ.  The driver's checks it keeps: a rank
 * of 1 to 5 (3 to 5 for im2col), a 16-byte aligned address, arrays given. */
struct map_words {
    CUtensorMap *map;
    unsigned n;
};

static void map_put(struct map_words *m, uint64_t v)
{
    if (m->n < CU_TENSOR_MAP_NUM_QWORDS)
        m->map->opaque[m->n++] = v;
}

static CUresult map_start(struct map_words *m, CUtensorMap *map, cuuint32_t rank, unsigned min_rank, void *address,
                          const cuuint64_t *dim, const cuuint64_t *strides, const cuuint32_t *element_strides)
{
    if (!map || rank < min_rank || rank > 5 || !address || ((uintptr_t)address & 15) || !dim || !element_strides ||
        (rank > 1 && !strides))
        return CUDA_ERROR_INVALID_VALUE;
    memset(map, 0, sizeof(*map));
    *m = (struct map_words){ map, 0 };
    map_put(m, (uint64_t)(uintptr_t)address);
    for (cuuint32_t i = 0; i < rank; i++)
        map_put(m, dim[i] ^ (uint64_t)element_strides[i] << 48);
    for (cuuint32_t i = 0; i + 1 < rank; i++)
        map_put(m, strides[i]);
    return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                const cuuint32_t *boxDim, const cuuint32_t *elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    ENTER();
    struct map_words m;
    CUresult r = map_start(&m, tensorMap, tensorRank, 1, globalAddress, globalDim, globalStrides, elementStrides);
    if (r != CUDA_SUCCESS || !boxDim)
        return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < tensorRank; i++)
        map_put(&m, boxDim[i]);
    map_put(&m, (uint64_t)tensorDataType | (uint64_t)interleave << 8 | (uint64_t)swizzle << 16 |
                    (uint64_t)l2Promotion << 24 | (uint64_t)oobFill << 32);
    return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                 void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                 const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner,
                                 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                 const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                 CUtensorMapFloatOOBfill oobFill)
{
    ENTER();
    struct map_words m;
    CUresult r = map_start(&m, tensorMap, tensorRank, 3, globalAddress, globalDim, globalStrides, elementStrides);
    if (r != CUDA_SUCCESS || !pixelBoxLowerCorner || !pixelBoxUpperCorner)
        return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i + 2 < tensorRank; i++)
        map_put(&m, (uint64_t)(uint32_t)pixelBoxLowerCorner[i] << 32 | (uint32_t)pixelBoxUpperCorner[i]);
    map_put(&m, (uint64_t)channelsPerPixel << 32 | pixelsPerColumn);
    map_put(&m, (uint64_t)tensorDataType | (uint64_t)interleave << 8 | (uint64_t)swizzle << 16 |
                    (uint64_t)l2Promotion << 24 | (uint64_t)oobFill << 32);
    return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                     void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                     int pixelBoxLowerCornerWidth, int pixelBoxUpperCornerWidth,
                                     cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                     const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                     CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle,
                                     CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    ENTER();
    struct map_words m;
    CUresult r = map_start(&m, tensorMap, tensorRank, 3, globalAddress, globalDim, globalStrides, elementStrides);
    if (r != CUDA_SUCCESS)
        return r;
    map_put(&m, (uint64_t)(uint32_t)pixelBoxLowerCornerWidth << 32 | (uint32_t)pixelBoxUpperCornerWidth);
    map_put(&m, (uint64_t)channelsPerPixel << 32 | pixelsPerColumn);
    map_put(&m, (uint64_t)tensorDataType | (uint64_t)interleave << 8 | (uint64_t)swizzle << 16 |
                    (uint64_t)l2Promotion << 24 | (uint64_t)oobFill << 32 | (uint64_t)mode << 40);
    return CUDA_SUCCESS;
}

CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
    ENTER();
    if (!tensorMap || !globalAddress || ((uintptr_t)globalAddress & 15))
        return CUDA_ERROR_INVALID_VALUE;
    tensorMap->opaque[0] = (uint64_t)(uintptr_t)globalAddress;
    return CUDA_SUCCESS;
}
