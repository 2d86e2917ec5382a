/*
 * What the NVML views of libvgpu-nvml share (nvml_view.c, nvml_processes.c,
 * nvml_utilization.c, nvml_topology.c): which device a handle is, and the
 * vGPU's processes as the caller sees them.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/nvml_abi.h"
#include "vgpu_backend/join/self.h"

/*
 * Is dev one of the vGPU's devices?  0 with its vGPU index in *index; -1
 * when no vGPU shapes what NVML shows (the driver answers); else the answer,
 * NVML_ERROR_INVALID_ARGUMENT, as NVML answers a handle that is no device.
 * *self: the vGPU.
 */
int vgpu_nvml_view_device(nvmlDevice_t dev, const struct vgpu_self **self, int *index);

struct vgpu_nvml_proc {
    unsigned pid;  /* in the caller's PID namespace */
    uint64_t held; /* bytes it holds on the device, as BAR0 counts them */
};

/*
 * The vGPU's live processes on its device i that the caller can see
 * (pid_ns.h: a process in another container's PID namespace is left out),
 * holding: only those holding memory there.  A malloc'd array, or NULL when
 * there are none (or no memory), and how many in *n.
 */
struct vgpu_nvml_proc *vgpu_nvml_processes_seen(const struct vgpu_self *self, int i, bool holding, unsigned *n);

static inline bool vgpu_nvml_has_pid(const struct vgpu_nvml_proc *p, unsigned n, unsigned pid)
{
    for (unsigned k = 0; k < n; k++)
        if (p[k].pid == pid)
            return true;
    return false;
}
