/*
 * A device's memory as NVML reports it: what every process sharing
 * FAKEGPU_STATE holds there.
 */
#include "test/fake/nvml/fake_nvml.h"

static void memory_of(int dev, unsigned long long *total, unsigned long long *free_b, unsigned long long *used)
{
    *total = fakegpu_config()->memory;
    *used = fakegpu_state_device_used(dev);
    *free_b = *used < *total ? *total - *used : 0;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r == NVML_SUCCESS && !m)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        memory_of(dev->index, &m->total, &m->free, &m->used);
    return r;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r == NVML_SUCCESS && !m)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && m->version != nvmlMemory_v2)
        r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (r == NVML_SUCCESS) {
        m->reserved = 0;
        memory_of(dev->index, &m->total, &m->free, &m->used);
    }
    return r;
}
