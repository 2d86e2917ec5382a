/*
 * The devices and memory CUDA shows.  The driver shows only the vGPU's
 * devices (CUDA_VISIBLE_DEVICES, cuda_devices.c); sizes are the vGPU's: its
 * quota as total, what the whole vGPU has left of it as free.
 */
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_backend/join/cuda_devices.h"
#include "vgpu_backend/join/current.h"
#include "vgpu_backend/memory/quota.h"
#include "vgpu_cuda_slots.h"

CUresult vgpu_backend_device_count(int *count)
{
    return VGPU_REAL_CUDA(cuDeviceGetCount)(count);
}

CUresult vgpu_backend_device_total_mem(CUdevice dev, size_t *bytes)
{
    CUresult r = VGPU_REAL_CUDA(cuDeviceTotalMem_v2)(bytes, dev);
    struct vgpu_self *self = vgpu_self_on();
    int vdev = self && r == CUDA_SUCCESS ? vgpu_cuda_vgpu_index(dev) : -1;
    if (vdev >= 0)
        *bytes = vgpu_self_total(self, vdev);
    return r;
}

CUresult vgpu_backend_mem_info(size_t *free_bytes, size_t *total_bytes)
{
    CUresult r = VGPU_REAL_CUDA(cuMemGetInfo_v2)(free_bytes, total_bytes);
    struct vgpu_self *self = vgpu_self_on();
    int vdev = self && r == CUDA_SUCCESS ? vgpu_current_vdev(NULL, NULL) : -1;
    if (vdev < 0)
        return r;
    vgpu_bar0_reap(self->bar0.bar, false);
    vgpu_pools_resync_all(self);
    vgpu_graph_mem_resync_all(self);
    uint64_t total = vgpu_self_total(self, vdev), used = vgpu_self_used(self, vdev);
    uint64_t left = used < total ? total - used : 0;
    /* Never more than the GPU really has free (other tenants, other vGPUs). */
    *free_bytes = left < *free_bytes ? left : *free_bytes;
    *total_bytes = total;
    return r;
}
