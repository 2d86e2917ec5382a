/* The devices and memory NVML shows.  Pass-through: the physical GPU's. */
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_nvml_slots.h"

nvmlReturn_t vgpu_backend_nvml_device_count(unsigned int *count)
{
    return VGPU_REAL_NVML(nvmlDeviceGetCount_v2)(count);
}

void vgpu_backend_nvml_memory_view(nvmlDevice_t dev, unsigned long long *total, unsigned long long *free_bytes,
                                   unsigned long long *used)
{
    (void)dev;
    (void)total;
    (void)free_bytes;
    (void)used;
}
