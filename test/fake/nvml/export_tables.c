/*
 * nvmlInternalGetExportTable: nvidia-smi's table, and the fake's own
 * (../gpu/identity.c).
 */
#include "test/fake/nvml/fake_nvml.h"

#include <string.h>

/* nvidia-smi's private table (c4fe3e6c-...): its size (shorter than
 * r580's 0x870) and functions not emulated. */
static const void *const smi_table[36] = { (const void *)sizeof(smi_table) };
static const unsigned char smi_id[16] = { 0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
                                          0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4 };

nvmlReturn_t nvmlInternalGetExportTable(const void **table, const void *id)
{
    fake_count_call();
    if (table && id && memcmp(id, smi_id, sizeof(smi_id)) == 0) {
        *table = smi_table;
        return NVML_SUCCESS;
    }
    const void *t = id ? fakegpu_export_table(id) : NULL;
    if (!table || !t)
        return NVML_ERROR_INVALID_ARGUMENT;
    *table = t;
    return NVML_SUCCESS;
}
