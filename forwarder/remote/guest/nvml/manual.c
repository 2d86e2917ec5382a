/*
 * The remote NVML's calls written by hand, the guest's side
 * (forwarder/remote/executor/nvml/manual.c is the other; the messages:
 * forwarder/remote/spec/nvml.remote): an error's text, kept for the life
 * of the process as NVML's own are, process lists, and nvidia-smi's
 * private table.  A device by a string and field values are generated
 * whole from the spec.
 */
#include "forwarder/remote/guest/nvml/manual.h"

#include "common/log.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/spec/private_tables.h"

#include "vgpu_nvml_slots.h"

#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_NVML_SLOT_##name

#define MAX_PROCESSES VGPU_IN_nvmlDeviceGetComputeRunningProcesses_v3_room_MAX

/* The room the caller gave (at most 256 entries cross): how many there
 * are, and the entries that fit, in the caller's array. */
static nvmlReturn_t processes(unsigned slot, nvmlDevice_t device, unsigned *count, void *infos, size_t entry)
{
    if (!count || (*count && !infos))
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned room = *count < MAX_PROCESSES ? *count : MAX_PROCESSES;
    struct vgpu_in_nvmlDeviceGetComputeRunningProcesses_v3 in = { .device = device,
                                                                  .room = room,
                                                                  .entry = (uint32_t)entry };
    /* The count comes back whatever the call returned (how many there
     * are, for a room too small), or, with no reply, stays. */
    struct vgpu_out_nvmlDeviceGetComputeRunningProcesses_v3 out = { .count = *count,
                                                                    .tail = infos,
                                                                    .tail_size = room * entry };
    int r = vgpu_remote_call_nvmlDeviceGetComputeRunningProcesses_v3(slot, 0, &in, &out);
    if (r == NVML_SUCCESS && (out.count > room || out.infos_size != out.count * entry))
        return NVML_ERROR_UNKNOWN;
    *count = out.count;
    return (nvmlReturn_t)r;
}

static int fetch_text(unsigned slot, uint32_t code, char *buf, size_t size)
{
    struct vgpu_in_nvmlErrorString in = { .result = (nvmlReturn_t)code };
    struct vgpu_out_nvmlErrorString out = { .tail = buf, .tail_size = size };
    int r = vgpu_remote_call_nvmlErrorString(slot, 0, &in, &out);
    if (r == 0 && out.str != buf)
        memmove(buf, out.str, strlen(out.str) + 1);
    return r;
}

const char *vgpu_remote_guest_nvmlErrorString(nvmlReturn_t result)
{
    const char *s = NULL;
    int r = vgpu_remote_text(SLOT(nvmlErrorString), (uint32_t)result, fetch_text, &s);
    if (r == 0)
        return s;
    return r == -1 ? "Unknown Error" : "Unknown Error (the remote GPU's executor is unavailable)";
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                                    nvmlProcessInfo_v1_t *infos)
{
    return processes(SLOT(nvmlDeviceGetComputeRunningProcesses), device, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                       nvmlProcessInfo_v2_t *infos)
{
    return processes(SLOT(nvmlDeviceGetComputeRunningProcesses_v2), device, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                       nvmlProcessInfo_t *infos)
{
    return processes(SLOT(nvmlDeviceGetComputeRunningProcesses_v3), device, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                                     nvmlProcessInfo_v1_t *infos)
{
    return processes(SLOT(nvmlDeviceGetGraphicsRunningProcesses), device, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                        nvmlProcessInfo_v2_t *infos)
{
    return processes(SLOT(nvmlDeviceGetGraphicsRunningProcesses_v2), device, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                        nvmlProcessInfo_t *infos)
{
    return processes(SLOT(nvmlDeviceGetGraphicsRunningProcesses_v3), device, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                                       nvmlProcessInfo_v1_t *infos)
{
    return processes(SLOT(nvmlDeviceGetMPSComputeRunningProcesses), device, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                          nvmlProcessInfo_v2_t *infos)
{
    return processes(SLOT(nvmlDeviceGetMPSComputeRunningProcesses_v2), device, infoCount, infos, sizeof(*infos));
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                          nvmlProcessInfo_t *infos)
{
    return processes(SLOT(nvmlDeviceGetMPSComputeRunningProcesses_v3), device, infoCount, infos, sizeof(*infos));
}

/* NVML's private table, nvidia-smi's (c4fe3e6c-...): a table of the size
 * the host's NVML gives it (its first word, which nvidia-smi checks
 * against its own) and with no function, which nvidia-smi checks before
 * each it calls.  Built once and kept for the life of the process (owned
 * by this function; set once, by compare and swap).  Any other table is
 * not supported, logged once. */
nvmlReturn_t vgpu_remote_guest_nvmlInternalGetExportTable(const void **table, const void *id)
{
    static const unsigned char smi[16] = VGPU_REMOTE_SMI_TABLE;
    static void *kept;
    static int said;
    if (!table || !id)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (memcmp(id, smi, sizeof(smi)) != 0) {
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            vgpu_warn("remote NVML: a private table other than nvidia-smi's is not supported (docs/design/remote.md)");
        return NVML_ERROR_NOT_SUPPORTED;
    }
    void *t = __atomic_load_n(&kept, __ATOMIC_ACQUIRE);
    if (!t) {
        struct vgpu_in_nvmlInternalGetExportTable in;
        memcpy(in.id, smi, sizeof(smi));
        struct vgpu_out_nvmlInternalGetExportTable out = { 0 };
        int r = vgpu_remote_call_nvmlInternalGetExportTable(SLOT(nvmlInternalGetExportTable), 0, &in, &out);
        if (r != NVML_SUCCESS)
            return (nvmlReturn_t)r;
        uint64_t size = out.size;
        if (size < sizeof(size) || size > VGPU_REMOTE_SMI_TABLE_MAX || size % sizeof(void *))
            return NVML_ERROR_UNKNOWN;
        void *fresh = calloc(1, size);
        if (!fresh)
            return NVML_ERROR_MEMORY;
        memcpy(fresh, &size, sizeof(size));
        /* t is NULL: a thread that sets kept first wins, the other's goes. */
        if (__atomic_compare_exchange_n(&kept, &t, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            t = fresh;
        else
            free(fresh);
    }
    *table = t;
    return NVML_SUCCESS;
}
