/*
 * The devices and memory NVML shows: the vGPU's devices only,
 * numbered as the vGPU numbers them (as CUDA numbers them too, so tools
 * that match CUDA and NVML devices by UUID or PCI bus id still can); the
 * vGPU's quota and usage.
 */
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_backend/join/peer/peer.h"
#include "vgpu_backend/nvml/nvml_view.h"
#include "vgpu_nvml_slots.h"

#include <string.h>

/* The vGPU when it shapes what NVML shows; NULL: pass-through. */
static const struct vgpu_self *shaping(void)
{
    const struct vgpu_self *self = vgpu_peer_self();
    return self->mode == VGPU_MODE_OFF ? NULL : self;
}

int vgpu_nvml_view_device(nvmlDevice_t dev, const struct vgpu_self **self, int *index)
{
    *self = shaping();
    if (!*self)
        return -1;
    *index = (*self)->mode == VGPU_MODE_ON ? vgpu_self_index_of_nvml(*self, dev) : -1;
    return *index >= 0 ? 0 : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t vgpu_backend_nvml_admit(void)
{
    /* A refused process still initialises NVML; it is shown no device. */
    vgpu_peer_self();
    return NVML_SUCCESS;
}

nvmlReturn_t vgpu_backend_nvml_device_count(unsigned int *count)
{
    const struct vgpu_self *self = shaping();
    if (!self)
        return VGPU_REAL_NVML(nvmlDeviceGetCount_v2)(count);
    unsigned physical;
    nvmlReturn_t r = VGPU_REAL_NVML(nvmlDeviceGetCount_v2)(&physical); /* UNINITIALIZED as the driver says it */
    if (r == NVML_SUCCESS)
        *count = self->mode == VGPU_MODE_ON ? (unsigned)self->ndev : 0;
    return r;
}

nvmlReturn_t vgpu_backend_nvml_device_by_index(unsigned int index, nvmlDevice_t *dev)
{
    const struct vgpu_self *self = shaping();
    if (!self)
        return VGPU_REAL_NVML(nvmlDeviceGetHandleByIndex_v2)(index, dev);
    unsigned physical;
    nvmlReturn_t r = VGPU_REAL_NVML(nvmlDeviceGetCount_v2)(&physical);
    if (r != NVML_SUCCESS)
        return r;
    if (self->mode != VGPU_MODE_ON || index >= (unsigned)self->ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    *dev = self->dev[index].nvml;
    return NVML_SUCCESS;
}

nvmlReturn_t vgpu_backend_nvml_device_found(nvmlReturn_t r, nvmlDevice_t *dev)
{
    const struct vgpu_self *self = shaping();
    if (!self || r != NVML_SUCCESS)
        return r;
    return self->mode == VGPU_MODE_ON && vgpu_self_index_of_nvml(self, *dev) >= 0 ? NVML_SUCCESS
                                                                                   : NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t vgpu_backend_nvml_device_index(nvmlDevice_t dev, unsigned int *index)
{
    const struct vgpu_self *self = shaping();
    if (!self)
        return VGPU_REAL_NVML(nvmlDeviceGetIndex)(dev, index);
    nvmlReturn_t r = VGPU_REAL_NVML(nvmlDeviceGetIndex)(dev, index);
    if (r != NVML_SUCCESS)
        return r;
    int i = self->mode == VGPU_MODE_ON ? vgpu_self_index_of_nvml(self, dev) : -1;
    if (i < 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned)i;
    return NVML_SUCCESS;
}

void vgpu_backend_nvml_memory_view(nvmlDevice_t dev, unsigned long long *total, unsigned long long *free_bytes,
                                   unsigned long long *used)
{
    const struct vgpu_self *self = shaping();
    int i = self && self->mode == VGPU_MODE_ON ? vgpu_self_index_of_nvml(self, dev) : -1;
    if (i < 0)
        return;
    vgpu_bar0_reap(self->bar0.bar, false);
    uint64_t t = vgpu_self_total(self, i), u = vgpu_self_used(self, i);
    uint64_t left = u < t ? t - u : 0;
    *total = t;
    *used = u < t ? u : t;
    *free_bytes = left < *free_bytes ? left : *free_bytes;
}
