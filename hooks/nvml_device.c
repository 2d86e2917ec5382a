/* NVML device hooks: the device count and memory figures NVML shows. */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_nvml_slots.h"

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    nvmlReturn_t r = deviceCount ? vgpu_backend_nvml_device_count(deviceCount) : NVML_ERROR_INVALID_ARGUMENT;
    vgpu_trace("nvmlDeviceGetCount_v2", r, "-> %u", r ? 0u : *deviceCount);
    return r;
}

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    nvmlReturn_t r = deviceCount ? vgpu_backend_nvml_device_count(deviceCount) : NVML_ERROR_INVALID_ARGUMENT;
    vgpu_trace("nvmlDeviceGetCount", r, "-> %u", r ? 0u : *deviceCount);
    return r;
}

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    nvmlReturn_t r = VGPU_REAL_NVML(nvmlDeviceGetMemoryInfo)(device, memory);
    if (r == NVML_SUCCESS)
        vgpu_backend_nvml_memory_view(device, &memory->total, &memory->free, &memory->used);
    vgpu_trace("nvmlDeviceGetMemoryInfo", r, "%p -> total=%llu free=%llu used=%llu", (void *)device,
               r ? 0ull : memory->total, r ? 0ull : memory->free, r ? 0ull : memory->used);
    return r;
}

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    nvmlReturn_t r = VGPU_REAL_NVML(nvmlDeviceGetMemoryInfo_v2)(device, memory);
    if (r == NVML_SUCCESS)
        vgpu_backend_nvml_memory_view(device, &memory->total, &memory->free, &memory->used);
    vgpu_trace("nvmlDeviceGetMemoryInfo_v2", r, "%p -> total=%llu free=%llu used=%llu", (void *)device,
               r ? 0ull : memory->total, r ? 0ull : memory->free, r ? 0ull : memory->used);
    return r;
}
