/*
 * The remote NVML's hand-written calls, the guest's side
 * (forwarder/remote/executor/nvml/manual.c is the other; what crosses: docs/design/remote.md):
 * a device by a string, an error's text, kept for the life of the
 * process as NVML's own are, process lists, and nvidia-smi's private table.
 */
#include "forwarder/remote/guest/nvml/manual.h"

#include "common/log.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/spec/private_tables.h"
#include "forwarder/remote/transport/wire.h"

#include "vgpu_nvml_slots.h"

#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_NVML_SLOT_##name
#define MAX_KEY 256

static nvmlReturn_t handle_by(unsigned slot, const char *key, nvmlDevice_t *device)
{
    if (!key || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    size_t n = strnlen(key, MAX_KEY);
    if (n == MAX_KEY)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t h = 0;
    size_t got = 0;
    struct iovec q = { (void *)key, n }, a = { &h, sizeof(h) };
    int r = vgpu_remote_call(slot, &q, 1, &a, 1, &got);
    if (r == NVML_SUCCESS && got != sizeof(h))
        return NVML_ERROR_UNKNOWN;
    if (r == NVML_SUCCESS)
        *device = (nvmlDevice_t)(uintptr_t)h;
    return (nvmlReturn_t)r;
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
    return handle_by(SLOT(nvmlDeviceGetHandleByPciBusId), pciBusId, device);
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    return handle_by(SLOT(nvmlDeviceGetHandleByPciBusId_v2), pciBusId, device);
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    return handle_by(SLOT(nvmlDeviceGetHandleByUUID), uuid, device);
}

nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device)
{
    return handle_by(SLOT(nvmlDeviceGetHandleBySerial), serial, device);
}

/* A process list: [device][room][entry size]; back the count the driver
 * said and, when it succeeded, that many entries.  Their pids are the
 * host's (the executor's and its vGPU's other processes). */
#define MAX_PROCESSES 256
static nvmlReturn_t processes(unsigned slot, nvmlDevice_t device, unsigned *count, void *infos, size_t entry)
{
    if (!count || (*count && !infos))
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned room = *count < MAX_PROCESSES ? *count : MAX_PROCESSES;
    uint64_t w[3] = { (uint64_t)(uintptr_t)device, room, entry }, n = 0;
    size_t got = 0;
    struct iovec q = { w, sizeof(w) }, a[2] = { { &n, sizeof(n) }, { infos, room * entry } };
    int r = vgpu_remote_call(slot, &q, 1, a, 2, &got);
    if (got < sizeof(n))
        return r == NVML_SUCCESS ? NVML_ERROR_UNKNOWN : (nvmlReturn_t)r;
    if (r == NVML_SUCCESS && (n > room || got != sizeof(n) + n * entry))
        return NVML_ERROR_UNKNOWN;
    *count = (unsigned)n;
    return (nvmlReturn_t)r;
}

const char *vgpu_remote_guest_nvmlErrorString(nvmlReturn_t result)
{
    const char *s = NULL;
    int r = vgpu_remote_text(SLOT(nvmlErrorString), (uint32_t)result, &s);
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
        uint64_t size = 0;
        size_t got = 0;
        struct iovec q = { (void *)smi, sizeof(smi) }, a = { &size, sizeof(size) };
        int r = vgpu_remote_call(SLOT(nvmlInternalGetExportTable), &q, 1, &a, 1, &got);
        if (r != NVML_SUCCESS)
            return (nvmlReturn_t)r;
        if (got != sizeof(size) || size < sizeof(size) || size > VGPU_REMOTE_SMI_TABLE_MAX || size % sizeof(void *))
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

/* Field values: [device][count] and the count entries (their field and
 * scope ids read); the entries back as NVML wrote them.  At most 256. */
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t *values)
{
    if (count <= 0 || !values)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (count > VGPU_REMOTE_NVML_FIELDS)
        return NVML_ERROR_NOT_SUPPORTED;
    uint64_t w[2] = { (uint64_t)(uintptr_t)device, (uint64_t)count };
    size_t got = 0, bytes = (size_t)count * sizeof(*values);
    struct iovec q[2] = { { w, sizeof(w) }, { values, bytes } }, a = { values, bytes };
    int r = vgpu_remote_call(SLOT(nvmlDeviceGetFieldValues), q, 2, &a, 1, &got);
    if (r == NVML_SUCCESS && got != bytes)
        return NVML_ERROR_UNKNOWN;
    return (nvmlReturn_t)r;
}
