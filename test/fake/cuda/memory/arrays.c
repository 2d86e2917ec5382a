/*
 * Arrays and mipmapped arrays: the device memory they take (width x
 * height x depth x channels x element bytes, over every level of a
 * mipmap) and their descriptors.  An array's bytes are host memory of its
 * own, rows of width x channels x element bytes, one layer after another
 * (copies/copies_3d.c reads and writes them); a mipmap's are not kept.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdlib.h>

#define ARRAY_MAGIC 0x59415241u /* "ARAY" */

struct CUarray_st {
    unsigned magic;
    int alive;
    int dev;
    unsigned long long bytes;
    CUDA_ARRAY3D_DESCRIPTOR desc;
    unsigned char *mem; /* its bytes; freed when it is destroyed (the handle stays, dead) */
};

struct CUmipmappedArray_st {
    unsigned magic;
    int alive;
    int dev;
    unsigned long long bytes;
};

static unsigned format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    default: return 4;
    }
}

static unsigned long long level_bytes(size_t w, size_t h, size_t d, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    return (unsigned long long)w * (h ? h : 1) * (d ? d : 1) * desc->NumChannels * format_bytes(desc->Format);
}

static CUresult array_create(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    if (!pHandle || !desc || desc->Width == 0 || desc->NumChannels == 0 || desc->NumChannels > 4)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = fake_current_device();
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUarray_st *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->bytes = level_bytes(desc->Width, desc->Height, desc->Depth, desc);
    a->mem = a->bytes <= (1ull << 32) ? calloc(1, a->bytes) : NULL;
    if (!a->mem || fake_charge(dev, a->bytes) != 0) {
        free(a->mem);
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->magic = ARRAY_MAGIC;
    a->alive = 1;
    a->dev = dev;
    a->desc = *desc;
    *pHandle = a;
    return CUDA_SUCCESS;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    ENTER();
    if (!pAllocateArray)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = pAllocateArray->Width,
                                  .Height = pAllocateArray->Height,
                                  .Format = pAllocateArray->Format,
                                  .NumChannels = pAllocateArray->NumChannels };
    return array_create(pHandle, &d);
}

CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{
    ENTER();
    if (!pAllocateArray)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = pAllocateArray->Width,
                                  .Height = pAllocateArray->Height,
                                  .Format = pAllocateArray->Format,
                                  .NumChannels = pAllocateArray->NumChannels };
    return array_create(pHandle, &d);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    ENTER();
    return array_create(pHandle, pAllocateArray);
}

CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{
    ENTER();
    if (!pAllocateArray)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = pAllocateArray->Width,
                                  .Height = pAllocateArray->Height,
                                  .Depth = pAllocateArray->Depth,
                                  .Format = pAllocateArray->Format,
                                  .NumChannels = pAllocateArray->NumChannels,
                                  .Flags = pAllocateArray->Flags };
    return array_create(pHandle, &d);
}

static int array_valid(CUarray a)
{
    return a && a->magic == ARRAY_MAGIC && __atomic_load_n(&a->alive, __ATOMIC_ACQUIRE);
}

CUresult cuArrayDestroy(CUarray hArray)
{
    ENTER();
    if (!array_valid(hArray) || !__atomic_exchange_n(&hArray->alive, 0, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_INVALID_HANDLE;
    fake_uncharge(hArray->dev, hArray->bytes);
    free(hArray->mem);
    hArray->mem = NULL;
    return CUDA_SUCCESS;
}

unsigned char *fake_array_bytes(CUarray a, size_t *row, size_t *height, size_t *depth)
{
    if (!array_valid(a) || !a->mem)
        return NULL;
    *row = a->desc.Width * a->desc.NumChannels * format_bytes(a->desc.Format);
    *height = a->desc.Height ? a->desc.Height : 1;
    *depth = a->desc.Depth ? a->desc.Depth : 1;
    return a->mem;
}

size_t fake_array_element(CUarray a)
{
    return array_valid(a) ? (size_t)a->desc.NumChannels * format_bytes(a->desc.Format) : 0;
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    ENTER();
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    if (!array_valid(hArray))
        return CUDA_ERROR_INVALID_HANDLE;
    *pArrayDescriptor = hArray->desc;
    return CUDA_SUCCESS;
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    ENTER();
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    if (!array_valid(hArray))
        return CUDA_ERROR_INVALID_HANDLE;
    pArrayDescriptor->Width = hArray->desc.Width;
    pArrayDescriptor->Height = hArray->desc.Height;
    pArrayDescriptor->Format = hArray->desc.Format;
    pArrayDescriptor->NumChannels = hArray->desc.NumChannels;
    return CUDA_SUCCESS;
}

CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR_v1 *pArrayDescriptor, CUarray hArray)
{
    ENTER();
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    if (!array_valid(hArray))
        return CUDA_ERROR_INVALID_HANDLE;
    pArrayDescriptor->Width = (unsigned int)hArray->desc.Width;
    pArrayDescriptor->Height = (unsigned int)hArray->desc.Height;
    pArrayDescriptor->Format = hArray->desc.Format;
    pArrayDescriptor->NumChannels = hArray->desc.NumChannels;
    return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                unsigned int numMipmapLevels)
{
    ENTER();
    const CUDA_ARRAY3D_DESCRIPTOR *d = pMipmappedArrayDesc;
    if (!pHandle || !d || d->Width == 0 || d->NumChannels == 0 || d->NumChannels > 4 || numMipmapLevels == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = fake_current_device();
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    unsigned long long bytes = 0;
    size_t w = d->Width, h = d->Height, z = d->Depth;
    for (unsigned i = 0; i < numMipmapLevels; i++) {
        bytes += level_bytes(w, h, z, d);
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h; /* 0 (1D) stays 0, i.e. 1 */
        z = z > 1 ? z / 2 : z;
    }
    struct CUmipmappedArray_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (fake_charge(dev, bytes) != 0) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->magic = ARRAY_MAGIC;
    m->alive = 1;
    m->dev = dev;
    m->bytes = bytes;
    *pHandle = m;
    return CUDA_SUCCESS;
}

int fake_mipmapped_array_valid(CUmipmappedArray m)
{
    return m && m->magic == ARRAY_MAGIC && __atomic_load_n(&m->alive, __ATOMIC_ACQUIRE);
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    ENTER();
    struct CUmipmappedArray_st *m = hMipmappedArray;
    if (!m || m->magic != ARRAY_MAGIC || !__atomic_exchange_n(&m->alive, 0, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_INVALID_HANDLE;
    fake_uncharge(m->dev, m->bytes);
    return CUDA_SUCCESS;
}
