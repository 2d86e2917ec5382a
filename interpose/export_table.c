/*
 * cuGetExportTable: the driver's private tables (the CUDA runtime asks for
 * 8-9 of them) pass through untouched.  One id is vgpu's own: the table
 * through which libvgpu-nvml reaches this library's vGPU backend
 * (vgpu_backend/join/peer/peer.h).
 */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/join/peer/peer.h"
#include "vgpu_cuda_slots.h"

#include <cuda.h>

VGPU_EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    const struct vgpu_peer_table *t = vgpu_peer_table_for(pExportTableId);
    CUresult r;
    if (t && ppExportTable) {
        *ppExportTable = t;
        r = CUDA_SUCCESS;
    } else {
        r = VGPU_REAL_CUDA(cuGetExportTable)(ppExportTable, pExportTableId);
    }
    if (vgpu_trace_enabled()) {
        const unsigned char *b = pExportTableId ? (const unsigned char *)pExportTableId->bytes : NULL;
        if (b)
            vgpu_trace_write("cuGetExportTable", r, "%02x%02x%02x%02x-...-%02x%02x%s", b[0], b[1], b[2], b[3], b[14],
                             b[15], t ? " (vgpu)" : "");
        else
            vgpu_trace_write("cuGetExportTable", r, "NULL");
    }
    return r;
}
