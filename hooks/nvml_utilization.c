/* NVML's utilization queries: the vGPU's processes' use of the GPU, not the GPU's. */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_nvml_slots.h"

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    int r = utilization ? vgpu_backend_nvml_utilization(device, utilization) : NVML_ERROR_INVALID_ARGUMENT;
    if (r < 0)
        r = VGPU_REAL_NVML(nvmlDeviceGetUtilizationRates)(device, utilization);
    vgpu_trace("nvmlDeviceGetUtilizationRates", r, "%p -> gpu=%u memory=%u", (void *)device,
               r ? 0u : utilization->gpu, r ? 0u : utilization->memory);
    return (nvmlReturn_t)r;
}

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                         nvmlProcessUtilizationSample_t *utilization,
                                                         unsigned int *processSamplesCount,
                                                         unsigned long long lastSeenTimeStamp)
{
    int r = processSamplesCount ? vgpu_backend_nvml_process_utilization(device, utilization, processSamplesCount,
                                                                        lastSeenTimeStamp)
                                : NVML_ERROR_INVALID_ARGUMENT;
    if (r < 0)
        r = VGPU_REAL_NVML(nvmlDeviceGetProcessUtilization)(device, utilization, processSamplesCount,
                                                            lastSeenTimeStamp);
    vgpu_trace("nvmlDeviceGetProcessUtilization", r, "%p since %llu -> %u", (void *)device, lastSeenTimeStamp,
               processSamplesCount ? *processSamplesCount : 0u);
    return (nvmlReturn_t)r;
}

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device,
                                                               nvmlProcessesUtilizationInfo_t *procesesUtilInfo)
{
    int r = procesesUtilInfo ? vgpu_backend_nvml_processes_utilization(device, procesesUtilInfo)
                             : NVML_ERROR_INVALID_ARGUMENT;
    if (r < 0)
        r = VGPU_REAL_NVML(nvmlDeviceGetProcessesUtilizationInfo)(device, procesesUtilInfo);
    vgpu_trace("nvmlDeviceGetProcessesUtilizationInfo", r, "%p since %llu -> %u", (void *)device,
               procesesUtilInfo ? procesesUtilInfo->lastSeenTimeStamp : 0ull,
               procesesUtilInfo ? procesesUtilInfo->processSamplesCount : 0u);
    return (nvmlReturn_t)r;
}
