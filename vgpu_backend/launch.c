/* Compute sharing.  Pass-through: every launch goes ahead at once. */
#include "vgpu_backend/backend.h"

CUresult vgpu_backend_launch_admit(CUstream stream)
{
    (void)stream;
    return CUDA_SUCCESS;
}
