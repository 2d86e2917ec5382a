/* The devices and memory CUDA shows.  Pass-through: the physical GPU's. */
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_cuda_slots.h"

CUresult vgpu_backend_device_count(int *count)
{
    return VGPU_REAL_CUDA(cuDeviceGetCount)(count);
}

CUresult vgpu_backend_device_total_mem(CUdevice dev, size_t *bytes)
{
    return VGPU_REAL_CUDA(cuDeviceTotalMem_v2)(bytes, dev);
}

CUresult vgpu_backend_mem_info(size_t *free_bytes, size_t *total_bytes)
{
    return VGPU_REAL_CUDA(cuMemGetInfo_v2)(free_bytes, total_bytes);
}
