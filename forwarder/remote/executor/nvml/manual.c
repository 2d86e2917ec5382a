/*
 * The remote NVML's hand-written calls, the executor's side (the guest's:
 * forwarder/remote/guest/nvml/manual.c; what crosses: docs/design/remote.md): a device
 * by a string (a PCI bus id, a UUID, a serial) of at most 255 bytes, which
 * becomes the guest's handle; an error's text.
 */
#include "forwarder/remote/executor/nvml/calls.h"

#include "forwarder/remote/spec/private_tables.h"
#include "forwarder/remote/transport/wire.h"
#include "vgpu/nvml_abi.h"

#include <string.h>

#define MAX_KEY 256

static int handle_by(struct vgpu_exec *x, void *fn, const void *req, size_t len, const char *call)
{
    if (len >= MAX_KEY)
        return vgpu_exec_malformed(call, len);
    char key[MAX_KEY];
    memcpy(key, req, len);
    key[len] = 0;
    uint64_t h = 0;
    int r = ((int (*)(const char *, void **))fn)(key, (void **)&h);
    if (r == 0)
        vgpu_exec_handle_add(x, h);
    struct iovec v = { &h, r == 0 ? sizeof(h) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}

int vgpu_exec_nvmlDeviceGetHandleByPciBusId(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return handle_by(x, fn, req, len, "nvmlDeviceGetHandleByPciBusId");
}

int vgpu_exec_nvmlDeviceGetHandleByPciBusId_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return handle_by(x, fn, req, len, "nvmlDeviceGetHandleByPciBusId_v2");
}

int vgpu_exec_nvmlDeviceGetHandleByUUID(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return handle_by(x, fn, req, len, "nvmlDeviceGetHandleByUUID");
}

int vgpu_exec_nvmlDeviceGetHandleBySerial(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return handle_by(x, fn, req, len, "nvmlDeviceGetHandleBySerial");
}

/* [device][room][entry size]: the count, and the entries when the call succeeded. */
#define MAX_PROCESSES 256
static int processes(struct vgpu_exec *x, void *fn, const void *req, size_t len, size_t entry, const char *call)
{
    if (len != 24 || vgpu_exec_word(req, 1) > MAX_PROCESSES || vgpu_exec_word(req, 2) != entry)
        return vgpu_exec_malformed(call, len);
    uint64_t device = vgpu_exec_word(req, 0);
    if (!vgpu_exec_handle_known(x, device, false))
        return vgpu_exec_reply(x, x->lib->bad_handle, NULL, 0);
    unsigned count = (unsigned)vgpu_exec_word(req, 1);
    unsigned char infos[MAX_PROCESSES * 24];
    memset(infos, 0, sizeof(infos)); /* the entries' padding goes back as zeros, not the executor's stack */
    int r = ((int (*)(void *, unsigned *, void *))fn)((void *)(uintptr_t)device, &count, count ? infos : NULL);
    uint64_t n = count;
    if (r == 0 && n > vgpu_exec_word(req, 1))
        r = 999; /* the driver wrote past the room it was given: cannot be */
    struct iovec v[2] = { { &n, sizeof(n) }, { infos, r == 0 ? n * entry : 0 } };
    return vgpu_exec_reply(x, r, v, 2);
}

/* [code]: the text, at most 511 bytes. */
int vgpu_exec_nvmlErrorString(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len != 8)
        return vgpu_exec_malformed("nvmlErrorString", len);
    const char *s = ((const char *(*)(int))fn)((int)vgpu_exec_word(req, 0));
    struct iovec v = { (void *)s, s ? strnlen(s, 511) : 0 };
    return vgpu_exec_reply(x, 0, &v, 1);
}

int vgpu_exec_nvmlDeviceGetComputeRunningProcesses(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return processes(x, fn, req, len, 16, "nvmlDeviceGetComputeRunningProcesses");
}

int vgpu_exec_nvmlDeviceGetComputeRunningProcesses_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return processes(x, fn, req, len, 24, "nvmlDeviceGetComputeRunningProcesses_v2");
}

int vgpu_exec_nvmlDeviceGetComputeRunningProcesses_v3(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return processes(x, fn, req, len, 24, "nvmlDeviceGetComputeRunningProcesses_v3");
}

int vgpu_exec_nvmlDeviceGetGraphicsRunningProcesses(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return processes(x, fn, req, len, 16, "nvmlDeviceGetGraphicsRunningProcesses");
}

int vgpu_exec_nvmlDeviceGetGraphicsRunningProcesses_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return processes(x, fn, req, len, 24, "nvmlDeviceGetGraphicsRunningProcesses_v2");
}

int vgpu_exec_nvmlDeviceGetGraphicsRunningProcesses_v3(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return processes(x, fn, req, len, 24, "nvmlDeviceGetGraphicsRunningProcesses_v3");
}

int vgpu_exec_nvmlDeviceGetMPSComputeRunningProcesses(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return processes(x, fn, req, len, 16, "nvmlDeviceGetMPSComputeRunningProcesses");
}

int vgpu_exec_nvmlDeviceGetMPSComputeRunningProcesses_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return processes(x, fn, req, len, 24, "nvmlDeviceGetMPSComputeRunningProcesses_v2");
}

int vgpu_exec_nvmlDeviceGetMPSComputeRunningProcesses_v3(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return processes(x, fn, req, len, 24, "nvmlDeviceGetMPSComputeRunningProcesses_v3");
}

/* NVML's private table, nvidia-smi's: its size (its first word) only, the
 * guest's table having no function.  Any other table: not supported. */
int vgpu_exec_nvmlInternalGetExportTable(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    static const unsigned char smi[16] = VGPU_REMOTE_SMI_TABLE;
    if (len != sizeof(smi))
        return vgpu_exec_malformed("nvmlInternalGetExportTable", len);
    if (memcmp(req, smi, sizeof(smi)) != 0)
        return vgpu_exec_reply(x, NVML_ERROR_NOT_SUPPORTED, NULL, 0);
    const void *table = NULL;
    int r = ((int (*)(const void **, const void *))fn)(&table, req);
    uint64_t size = 0;
    if (r == 0 && !table)
        r = NVML_ERROR_UNKNOWN;
    if (r == 0)
        memcpy(&size, table, sizeof(size));
    struct iovec v = { &size, r == 0 ? sizeof(size) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}

/* [device][count] and count entries: the entries back.  The executor's own
 * copy is what NVML reads and writes. */
int vgpu_exec_nvmlDeviceGetFieldValues(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len < 16 || vgpu_exec_word(req, 1) == 0 || vgpu_exec_word(req, 1) > VGPU_REMOTE_NVML_FIELDS ||
        len != 16 + vgpu_exec_word(req, 1) * sizeof(nvmlFieldValue_t))
        return vgpu_exec_malformed("nvmlDeviceGetFieldValues", len);
    uint64_t device = vgpu_exec_word(req, 0);
    int count = (int)vgpu_exec_word(req, 1);
    if (!vgpu_exec_handle_known(x, device, false))
        return vgpu_exec_reply(x, x->lib->bad_handle, NULL, 0);
    nvmlFieldValue_t values[VGPU_REMOTE_NVML_FIELDS];
    memcpy(values, (const char *)req + 16, (size_t)count * sizeof(*values));
    int r =
        ((nvmlReturn_t(*)(nvmlDevice_t, int, nvmlFieldValue_t *))fn)((nvmlDevice_t)(uintptr_t)device, count, values);
    struct iovec v = { values, r == NVML_SUCCESS ? (size_t)count * sizeof(*values) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}
