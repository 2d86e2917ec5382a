/*
 * cuGetExportTable: cuBLASLt's table, and the fake's own
 * (../gpu/identity.c).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdlib.h>
#include <string.h>

/* cuBLASLt's private table (1734dc26-...), as r580 lays it out: its size
 * and 16 functions.  Function 4 copies two descriptions of the current
 * context's device (66 bytes each, as an H100's; the second ends in zeros,
 * as the H100's does) into memory taken with malloc, which function 13
 * frees; the others are not emulated. */
#define FAKE_LAYOUT_BYTES 66
static CUresult layout_get(void **first, void **second)
{
    CUdevice dev;
    CUresult r = fake_ctx_device(&dev, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    unsigned char *a = malloc(FAKE_LAYOUT_BYTES), *b = malloc(FAKE_LAYOUT_BYTES);
    if (!a || !b) {
        free(a);
        free(b);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < FAKE_LAYOUT_BYTES; i++) {
        a[i] = (unsigned char)(i % 8 + dev);
        b[i] = i < FAKE_LAYOUT_BYTES - 4 ? (unsigned char)(0xf0 + i / 16 + dev) : 0;
    }
    *first = a;
    *second = b;
    return CUDA_SUCCESS;
}

static CUresult layout_free(void *first, void *second)
{
    free(first);
    free(second);
    return CUDA_SUCCESS;
}

static CUresult layout_unknown(void)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}

#define LU (const void *)layout_unknown
static const void *const cublaslt_table[17] = {
    (const void *)sizeof(cublaslt_table),
    LU,
    LU,
    LU,
    (const void *)layout_get,
    LU,
    LU,
    LU,
    LU,
    LU,
    LU,
    LU,
    LU,
    (const void *)layout_free,
    LU,
    LU,
    LU,
};
static const unsigned char cublaslt_id[16] = { 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45,
                                               0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca };

CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    COUNT_CALL();
    if (!ppExportTable || !pExportTableId)
        return CUDA_ERROR_INVALID_VALUE;
    if (memcmp(pExportTableId->bytes, cublaslt_id, sizeof(cublaslt_id)) == 0) {
        *ppExportTable = cublaslt_table;
        return CUDA_SUCCESS;
    }
    const void *t = fakegpu_export_table((const unsigned char *)pExportTableId->bytes);
    if (!t)
        return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = t;
    return CUDA_SUCCESS;
}
