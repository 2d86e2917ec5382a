/*
 * The drivers' private tables whose functions cross to the host (the
 * guest's answers: forwarder/remote/guest/cuda/private/export_tables.c and
 * forwarder/remote/guest/nvml/manual.c; the executor's: the same files under
 * forwarder/remote/executor/; docs/design/remote.md, "The runtime's private tables").  Requests on the slot of cuGetExportTable (nvmlInternalGetExportTable):
 * [the table's UUID, 16 bytes][the function's index, 8 bytes] (NVML's: the UUID only).
 */
#pragma once

/* cuBLASLt's (Hopper's GEMMs): function 4 gives two descriptions of the
 * current context's device, copied into memory taken with malloc, which
 * function 13 frees. */
#define VGPU_REMOTE_CUBLASLT_TABLE                                                                                     \
    { 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45, 0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca }
#define VGPU_REMOTE_CUBLASLT_SLOTS 17 /* the driver's table: its size word and 16 functions */
#define VGPU_REMOTE_DEVICE_LAYOUT 4
#define VGPU_REMOTE_DEVICE_LAYOUT_FREE 13
/* No description is longer. */
#define VGPU_REMOTE_DEVICE_LAYOUT_MAX 4096

/* NVML's (nvidia-smi's): only its size crosses; the guest's table has no function. */
#define VGPU_REMOTE_SMI_TABLE                                                                                          \
    { 0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e, 0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4 }
/* No table is longer. */
#define VGPU_REMOTE_SMI_TABLE_MAX (64 * 1024)
