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

/* ---- which devices: the vGPU's, in its numbering ---- */

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    nvmlReturn_t r = device ? vgpu_backend_nvml_device_by_index(index, device) : NVML_ERROR_INVALID_ARGUMENT;
    vgpu_trace("nvmlDeviceGetHandleByIndex_v2", r, "%u -> %p", index, r ? NULL : (void *)*device);
    return r;
}

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    nvmlReturn_t r = device ? vgpu_backend_nvml_device_by_index(index, device) : NVML_ERROR_INVALID_ARGUMENT;
    vgpu_trace("nvmlDeviceGetHandleByIndex", r, "%u -> %p", index, r ? NULL : (void *)*device);
    return r;
}

#define LOOKUP(name, key, keyfmt)                                                                  \
    VGPU_EXPORT nvmlReturn_t name(const char *key, nvmlDevice_t *device)                            \
    {                                                                                              \
        nvmlReturn_t r = vgpu_backend_nvml_device_found(VGPU_REAL_NVML(name)(key, device), device); \
        vgpu_trace(#name, r, keyfmt " -> %p", key ? key : "(null)", r ? NULL : (void *)*device);     \
        return r;                                                                                  \
    }

LOOKUP(nvmlDeviceGetHandleByUUID, uuid, "%s")
LOOKUP(nvmlDeviceGetHandleByPciBusId, pciBusId, "%s")
LOOKUP(nvmlDeviceGetHandleByPciBusId_v2, pciBusId, "%s")
LOOKUP(nvmlDeviceGetHandleBySerial, serial, "%s")

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    nvmlReturn_t r = index ? vgpu_backend_nvml_device_index(device, index) : NVML_ERROR_INVALID_ARGUMENT;
    vgpu_trace("nvmlDeviceGetIndex", r, "%p -> %u", (void *)device, r ? 0u : *index);
    return r;
}
