/*
 * The remote NVML's calls written by hand, the executor's side (the
 * guest's: forwarder/remote/guest/nvml/manual.c; the messages:
 * forwarder/remote/spec/nvml.remote): an error's text, process lists, and
 * nvidia-smi's private table.  A device by a string and field values are
 * generated whole from the spec.
 */
#include "forwarder/remote/executor/nvml/calls.h"

#include "forwarder/remote/spec/private_tables.h"
#include "vgpu/nvml_abi.h"

#include <string.h>

/* A process list: the count, and the entries when the call succeeded; the
 * entries' size is the call's own. */
static int processes(struct vgpu_exec *x, void *fn, const struct vgpu_in_nvmlDeviceGetComputeRunningProcesses_v3 *in,
                     size_t entry, const char *call)
{
    if (in->entry != entry)
        return vgpu_exec_malformed(call, in->entry);
    unsigned count = in->room;
    unsigned char infos[VGPU_IN_nvmlDeviceGetComputeRunningProcesses_v3_room_MAX * sizeof(nvmlProcessInfo_t)];
    memset(infos, 0, sizeof(infos)); /* the entries' padding goes back as zeros, not the executor's stack */
    int r = ((int (*)(nvmlDevice_t, unsigned *, void *))fn)(in->device, &count, count ? infos : NULL);
    if (r == 0 && count > in->room)
        r = NVML_ERROR_UNKNOWN; /* the driver wrote past the room it was given: cannot be */
    struct vgpu_out_nvmlDeviceGetComputeRunningProcesses_v3 out = { .count = count,
                                                                    .infos = infos,
                                                                    .infos_size = r == 0 ? count * entry : 0 };
    return vgpu_exec_reply_nvmlDeviceGetComputeRunningProcesses_v3(x, r, in, &out);
}

int vgpu_exec_nvmlDeviceGetComputeRunningProcesses(struct vgpu_exec *x, void *fn,
                                                   const struct vgpu_in_nvmlDeviceGetComputeRunningProcesses_v3 *in)
{
    return processes(x, fn, in, sizeof(nvmlProcessInfo_v1_t), "nvmlDeviceGetComputeRunningProcesses");
}

int vgpu_exec_nvmlDeviceGetComputeRunningProcesses_v2(struct vgpu_exec *x, void *fn,
                                                      const struct vgpu_in_nvmlDeviceGetComputeRunningProcesses_v3 *in)
{
    return processes(x, fn, in, sizeof(nvmlProcessInfo_v2_t), "nvmlDeviceGetComputeRunningProcesses_v2");
}

int vgpu_exec_nvmlDeviceGetComputeRunningProcesses_v3(struct vgpu_exec *x, void *fn,
                                                      const struct vgpu_in_nvmlDeviceGetComputeRunningProcesses_v3 *in)
{
    return processes(x, fn, in, sizeof(nvmlProcessInfo_t), "nvmlDeviceGetComputeRunningProcesses_v3");
}

int vgpu_exec_nvmlDeviceGetGraphicsRunningProcesses(struct vgpu_exec *x, void *fn,
                                                    const struct vgpu_in_nvmlDeviceGetComputeRunningProcesses_v3 *in)
{
    return processes(x, fn, in, sizeof(nvmlProcessInfo_v1_t), "nvmlDeviceGetGraphicsRunningProcesses");
}

int vgpu_exec_nvmlDeviceGetGraphicsRunningProcesses_v2(struct vgpu_exec *x, void *fn,
                                                       const struct vgpu_in_nvmlDeviceGetComputeRunningProcesses_v3 *in)
{
    return processes(x, fn, in, sizeof(nvmlProcessInfo_v2_t), "nvmlDeviceGetGraphicsRunningProcesses_v2");
}

int vgpu_exec_nvmlDeviceGetGraphicsRunningProcesses_v3(struct vgpu_exec *x, void *fn,
                                                       const struct vgpu_in_nvmlDeviceGetComputeRunningProcesses_v3 *in)
{
    return processes(x, fn, in, sizeof(nvmlProcessInfo_t), "nvmlDeviceGetGraphicsRunningProcesses_v3");
}

int vgpu_exec_nvmlDeviceGetMPSComputeRunningProcesses(struct vgpu_exec *x, void *fn,
                                                      const struct vgpu_in_nvmlDeviceGetComputeRunningProcesses_v3 *in)
{
    return processes(x, fn, in, sizeof(nvmlProcessInfo_v1_t), "nvmlDeviceGetMPSComputeRunningProcesses");
}

int vgpu_exec_nvmlDeviceGetMPSComputeRunningProcesses_v2(
    struct vgpu_exec *x, void *fn, const struct vgpu_in_nvmlDeviceGetComputeRunningProcesses_v3 *in)
{
    return processes(x, fn, in, sizeof(nvmlProcessInfo_v2_t), "nvmlDeviceGetMPSComputeRunningProcesses_v2");
}

int vgpu_exec_nvmlDeviceGetMPSComputeRunningProcesses_v3(
    struct vgpu_exec *x, void *fn, const struct vgpu_in_nvmlDeviceGetComputeRunningProcesses_v3 *in)
{
    return processes(x, fn, in, sizeof(nvmlProcessInfo_t), "nvmlDeviceGetMPSComputeRunningProcesses_v3");
}

/* The driver's own text, which it keeps (its start, where it is longer than
 * a reply carries). */
int vgpu_exec_nvmlErrorString(struct vgpu_exec *x, void *fn, const struct vgpu_in_nvmlErrorString *in)
{
    struct vgpu_out_nvmlErrorString out = { .str = ((const char *(*)(nvmlReturn_t))fn)(in->result) };
    return vgpu_exec_reply_nvmlErrorString(x, 0, in, &out);
}

/* NVML's private table, nvidia-smi's: its size (its first word) only, the
 * guest's table having no function.  Any other table: not supported. */
int vgpu_exec_nvmlInternalGetExportTable(struct vgpu_exec *x, void *fn,
                                         const struct vgpu_in_nvmlInternalGetExportTable *in)
{
    static const unsigned char smi[16] = VGPU_REMOTE_SMI_TABLE;
    if (memcmp(in->id, smi, sizeof(smi)) != 0)
        return vgpu_exec_reply(x, NVML_ERROR_NOT_SUPPORTED, NULL, 0);
    const void *table = NULL;
    int r = ((int (*)(const void **, const void *))fn)(&table, in->id);
    struct vgpu_out_nvmlInternalGetExportTable out = { 0 };
    if (r == 0 && !table)
        r = NVML_ERROR_UNKNOWN;
    if (r == 0)
        memcpy(&out.size, table, sizeof(out.size));
    return vgpu_exec_reply_nvmlInternalGetExportTable(x, r, in, &out);
}
