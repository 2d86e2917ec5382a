/* NVML's process lists: the vGPU's processes, under the pids the caller knows them by. */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_nvml_slots.h"

enum kind { COMPUTE, GRAPHICS, MPS };

/* -1: no vGPU shapes the answer, the driver gives it. */
static int vgpu_list(enum kind kind, nvmlDevice_t device, unsigned int *count, void *infos, int version)
{
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (kind == COMPUTE)
        return vgpu_backend_nvml_processes(device, count, infos, version);
    return vgpu_backend_nvml_listed_processes(device, kind == MPS, count, infos, version);
}

#define PROCESSES(name, kind, version, info_t)                                                       \
    VGPU_EXPORT nvmlReturn_t name(nvmlDevice_t device, unsigned int *count, info_t *infos)           \
    {                                                                                                \
        int r = vgpu_list(kind, device, count, infos, version);                                      \
        bool forwarded = r < 0;                                                                      \
        if (forwarded)                                                                               \
            r = VGPU_REAL_NVML(name)(device, count, infos);                                          \
        vgpu_trace(#name, r, "%p%s -> %u", (void *)device, forwarded ? " (forwarded)" : "",          \
                   count ? *count : 0u);                                                             \
        return (nvmlReturn_t)r;                                                                      \
    }

PROCESSES(nvmlDeviceGetComputeRunningProcesses, COMPUTE, 1, nvmlProcessInfo_v1_t)
PROCESSES(nvmlDeviceGetComputeRunningProcesses_v2, COMPUTE, 2, nvmlProcessInfo_v2_t)
PROCESSES(nvmlDeviceGetComputeRunningProcesses_v3, COMPUTE, 3, nvmlProcessInfo_t)
PROCESSES(nvmlDeviceGetGraphicsRunningProcesses, GRAPHICS, 1, nvmlProcessInfo_v1_t)
PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v2, GRAPHICS, 2, nvmlProcessInfo_v2_t)
PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v3, GRAPHICS, 3, nvmlProcessInfo_t)
PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses, MPS, 1, nvmlProcessInfo_v1_t)
PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses_v2, MPS, 2, nvmlProcessInfo_v2_t)
PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses_v3, MPS, 3, nvmlProcessInfo_t)
