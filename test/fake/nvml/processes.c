/*
 * The processes NVML lists on a device: each process with memory there,
 * under its own pid (../gpu/usage.c).
 */
#include "test/fake/nvml/fake_nvml.h"

#include <string.h>

/* NVML's size protocol: *count in = capacity, out = how many there are. */
static nvmlReturn_t processes(nvmlDevice_t dev, unsigned int *count, void *infos, size_t stride, int v1)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r == NVML_SUCCESS && (!count || (*count && !infos)))
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r != NVML_SUCCESS)
        return r;
    struct fakegpu_proc_figure usage[FAKEGPU_MAX_PROCS];
    unsigned n = fakegpu_state_processes(dev->index, usage, FAKEGPU_MAX_PROCS);
    if (n > *count) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; i++) {
        char *slot = (char *)infos + i * stride;
        if (v1) {
            nvmlProcessInfo_v1_t p = { (unsigned)usage[i].pid, usage[i].value };
            memcpy(slot, &p, sizeof(p));
        } else {
            nvmlProcessInfo_t p = { .pid = (unsigned)usage[i].pid,
                                    .usedGpuMemory = usage[i].value,
                                    .gpuInstanceId = 0xFFFFFFFF,
                                    .computeInstanceId = 0xFFFFFFFF };
            memcpy(slot, &p, sizeof(p));
        }
    }
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_v1_t *infos)
{
    return processes(dev, count, infos, sizeof(*infos), 1);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_v2_t *infos)
{
    return processes(dev, count, infos, sizeof(*infos), 0);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_t *infos)
{
    return processes(dev, count, infos, sizeof(*infos), 0);
}

/* The fake cannot tell graphics or MPS clients from compute ones: every
 * process with memory on the device is in each list. */
#define PROCESS_LIST(name, info_t, v1)                                                                                 \
    nvmlReturn_t name(nvmlDevice_t dev, unsigned int *count, info_t *infos)                                            \
    {                                                                                                                  \
        return processes(dev, count, infos, sizeof(*infos), v1);                                                       \
    }
PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses, nvmlProcessInfo_v1_t, 1)
PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses_v2, nvmlProcessInfo_v2_t, 0)
PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses_v3, nvmlProcessInfo_t, 0)
PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses, nvmlProcessInfo_v1_t, 1)
PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses_v2, nvmlProcessInfo_v2_t, 0)
PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses_v3, nvmlProcessInfo_t, 0)
