/*
 * The processes NVML lists for a vGPU device: the vGPU's own, under the pids
 * the caller sees them by.  Compute processes come from BAR0's process table
 * with what vgpu counts for them; graphics and MPS processes are the
 * driver's list, less every process outside the vGPU.
 */
#define _GNU_SOURCE
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "common/contract/window/pid_ns.h"
#include "vgpu_backend/nvml/nvml_view.h"
#include "vgpu_nvml_slots.h"

#include <stdlib.h>
#include <unistd.h>

struct vgpu_nvml_proc *vgpu_nvml_processes_seen(const struct vgpu_self *self, int i, bool holding, unsigned *n)
{
    *n = 0;
    const struct vgpu_bar0 *b = self->bar0.bar;
    struct vgpu_nvml_proc *out = malloc(VGPU_BAR0_MAX_PROCS * sizeof(*out));
    if (!out)
        return NULL;
    struct vgpu_pid_ns ns;
    vgpu_pid_ns_open(&ns, "/proc");
    /* This process knows its own slot, whatever namespace recorded it. */
    int mine = self->bar0.slot >= 0 && self->bar0.pid == getpid() ? self->bar0.slot : -1;
    for (int s = 0; s < VGPU_BAR0_MAX_PROCS; s++) {
        uint64_t owner = __atomic_load_n(&b->procs[s].owner, __ATOMIC_ACQUIRE);
        if (VGPU_BAR0_OWNER_STATE(owner) != VGPU_PROC_LIVE)
            continue;
        uint64_t held = __atomic_load_n(&b->procs[s].held[i], __ATOMIC_RELAXED);
        if (holding && !held)
            continue; /* as the driver does: only processes with memory on this device */
        int pid = s == mine ? getpid()
                            : vgpu_pid_ns_visible(&ns, VGPU_BAR0_OWNER_PID(owner), b->procs[s].start_time);
        if (pid > 0)
            out[(*n)++] = (struct vgpu_nvml_proc){ (unsigned)pid, held };
    }
    vgpu_pid_ns_close(&ns);
    if (*n == 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* Entry k of a process list in the layout of version (1: without the
 * instance ids; 2 and 3 share one layout). */
static void put(void *out, unsigned k, int version, nvmlProcessInfo_t p)
{
    if (version == 1)
        ((nvmlProcessInfo_v1_t *)out)[k] = (nvmlProcessInfo_v1_t){ .pid = p.pid, .usedGpuMemory = p.usedGpuMemory };
    else
        ((nvmlProcessInfo_t *)out)[k] = p;
}

/* vgpu_nvml_view_device, for a list with room for count entries at out. */
static int list_of(nvmlDevice_t dev, unsigned count, const void *out, const struct vgpu_self **self, int *i)
{
    int shaped = vgpu_nvml_view_device(dev, self, i);
    return shaped == 0 && count && !out ? NVML_ERROR_INVALID_ARGUMENT : shaped;
}

int vgpu_backend_nvml_processes(nvmlDevice_t dev, unsigned int *count, void *out, int version)
{
    const struct vgpu_self *self;
    int i, shaped = list_of(dev, *count, out, &self, &i);
    if (shaped != 0)
        return shaped;
    vgpu_bar0_reap(self->bar0.bar, false);
    unsigned n, cap = out ? *count : 0;
    struct vgpu_nvml_proc *procs = vgpu_nvml_processes_seen(self, i, true, &n);
    for (unsigned k = 0; k < n && k < cap; k++)
        put(out, k, version, (nvmlProcessInfo_t){ .pid = procs[k].pid, .usedGpuMemory = procs[k].held,
                                                  .gpuInstanceId = 0xFFFFFFFFu, .computeInstanceId = 0xFFFFFFFFu });
    free(procs);
    *count = n;
    return n > cap ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

/* The driver's whole list (v3 layout), however long it grows meanwhile. */
static nvmlReturn_t driver_list(nvmlDevice_t dev, bool mps, nvmlProcessInfo_t **list, unsigned *n)
{
    __typeof__(&nvmlDeviceGetGraphicsRunningProcesses_v3) fn =
        mps ? VGPU_REAL_NVML(nvmlDeviceGetMPSComputeRunningProcesses_v3)
            : VGPU_REAL_NVML(nvmlDeviceGetGraphicsRunningProcesses_v3);
    *list = NULL;
    *n = 0;
    for (int tries = 0; tries < 4; tries++) {
        unsigned want = 0;
        nvmlReturn_t r = fn(dev, &want, NULL);
        if (r != NVML_SUCCESS && r != NVML_ERROR_INSUFFICIENT_SIZE)
            return r;
        if (want == 0)
            return NVML_SUCCESS;
        unsigned cap = want + 16; /* room for processes that start meanwhile */
        nvmlProcessInfo_t *l = malloc(cap * sizeof(*l));
        if (!l)
            return NVML_ERROR_MEMORY;
        r = fn(dev, &cap, l);
        if (r == NVML_SUCCESS) {
            *list = l;
            *n = cap;
            return NVML_SUCCESS;
        }
        free(l);
        if (r != NVML_ERROR_INSUFFICIENT_SIZE)
            return r;
    }
    return NVML_ERROR_INSUFFICIENT_SIZE;
}

int vgpu_backend_nvml_listed_processes(nvmlDevice_t dev, bool mps, unsigned int *count, void *out, int version)
{
    const struct vgpu_self *self;
    int i, shaped = list_of(dev, *count, out, &self, &i);
    if (shaped != 0)
        return shaped;
    nvmlProcessInfo_t *list;
    unsigned n;
    nvmlReturn_t r = driver_list(dev, mps, &list, &n);
    if (r != NVML_SUCCESS)
        return r;
    /* The driver names processes in the caller's PID namespace, as the
     * vGPU's list does. */
    unsigned nv, kept = 0, cap = out ? *count : 0;
    struct vgpu_nvml_proc *procs = vgpu_nvml_processes_seen(self, i, false, &nv);
    for (unsigned k = 0; k < n; k++) {
        if (!vgpu_nvml_has_pid(procs, nv, list[k].pid))
            continue;
        if (kept < cap)
            put(out, kept, version, list[k]);
        kept++;
    }
    free(procs);
    free(list);
    *count = kept;
    return kept > cap ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}
