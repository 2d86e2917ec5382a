/* Who may use the GPU.  Pass-through: every process is admitted. */
#include "vgpu_backend/backend.h"

CUresult vgpu_backend_cuda_admit(void)
{
    return CUDA_SUCCESS;
}

nvmlReturn_t vgpu_backend_nvml_admit(void)
{
    return NVML_SUCCESS;
}
