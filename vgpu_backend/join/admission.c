/*
 * Who may use the GPU, and what it sees: at cuInit (nvml_view.c for nvmlInit) the process
 * joins its vGPU (self.c).  A process whose vGPU settings are wrong sees no
 * device, with one error line saying what to fix.
 */
#include "vgpu_backend/backend.h"
#include "vgpu_backend/join/cuda_devices.h"
#include "vgpu_backend/join/self.h"

CUresult vgpu_backend_cuda_admit(void)
{
    const struct vgpu_self *self = vgpu_self_join(true);
    if (self->mode == VGPU_MODE_REFUSED)
        return CUDA_ERROR_NO_DEVICE;
    if (self->mode == VGPU_MODE_ON)
        vgpu_cuda_devices_restrict(self);
    return CUDA_SUCCESS;
}

void vgpu_backend_cuda_initialised(void)
{
    struct vgpu_self *self = vgpu_self_on();
    if (self)
        vgpu_cuda_devices_map(self);
}
