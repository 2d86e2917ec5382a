/*
 * cuBLASLt's private table (1734dc26-...), which its Hopper GEMMs ask the
 * driver for: the guest's side (the executor's: forwarder/remote/executor/
 * cuda/private/export_tables.c; the message: forwarder/remote/spec/
 * cuda.remote; docs/design/remote.md, "The runtime's private tables").
 *
 * Function 4 gives two descriptions of the current context's device
 * (bytes the driver keeps per device and copies into memory it takes with
 * malloc), function 13 frees them.  The first crosses: the executor calls
 * the host driver's and sends back their bytes, which land here in memory
 * of the guest's malloc; the second frees it.  The table's other functions
 * are not known and refuse (CUDA_ERROR_NOT_SUPPORTED, logged once).
 */
#include "forwarder/remote/guest/cuda/manual.h"

#include "common/log.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/spec/private_tables.h"

#include "vgpu_cuda_slots.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static CUresult device_layout(void **first, void **second)
{
    if (!first || !second)
        return CUDA_ERROR_INVALID_VALUE;
    static const uint8_t id[16] = VGPU_REMOTE_CUBLASLT_TABLE;
    struct vgpu_in_cuGetExportTable in = { .index = VGPU_REMOTE_DEVICE_LAYOUT };
    memcpy(&in.id, id, sizeof(id));
    uint8_t *bytes = malloc(2 * VGPU_REMOTE_DEVICE_LAYOUT_MAX);
    if (!bytes)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct vgpu_out_cuGetExportTable out = { .tail = bytes, .tail_size = 2 * VGPU_REMOTE_DEVICE_LAYOUT_MAX };
    CUresult r = (CUresult)vgpu_remote_call_cuGetExportTable(VGPU_CUDA_SLOT_cuGetExportTable, 0, &in, &out);
    size_t size = out.size;
    if (r == CUDA_SUCCESS && size == 0)
        r = CUDA_ERROR_UNKNOWN;
    void *one = NULL, *two = NULL;
    if (r == CUDA_SUCCESS && (!(one = malloc(size)) || !(two = malloc(size)))) {
        free(one);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS) {
        memcpy(one, out.first, size);
        memcpy(two, out.second, size);
        *first = one;
        *second = two;
    }
    free(bytes);
    return r;
}

static CUresult free_layout(void *first, void *second)
{
    free(first);
    free(second);
    return CUDA_SUCCESS;
}

static CUresult refuse_unknown(void)
{
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        vgpu_warn("remote GPU: a function of the private table 1734dc26-... (cuBLASLt's) is not known: refused as "
                  "not supported (docs/design/remote.md)");
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* The size word is the driver's (16 functions); the array goes on with
 * refusals, for a cuBLASLt that calls past it without reading the size. */
#define UNKNOWN (const void *)refuse_unknown
const void *const vgpu_remote_cublaslt_table[64] = {
    [0] = (const void *)(VGPU_REMOTE_CUBLASLT_SLOTS * sizeof(void *)),
    [1 ... VGPU_REMOTE_DEVICE_LAYOUT - 1] = UNKNOWN,
    [VGPU_REMOTE_DEVICE_LAYOUT] = (const void *)device_layout,
    [VGPU_REMOTE_DEVICE_LAYOUT + 1 ... VGPU_REMOTE_DEVICE_LAYOUT_FREE - 1] = UNKNOWN,
    [VGPU_REMOTE_DEVICE_LAYOUT_FREE] = (const void *)free_layout,
    [VGPU_REMOTE_DEVICE_LAYOUT_FREE + 1 ... 63] = UNKNOWN,
};
