/* Device memory accounting.  Pass-through: nothing is counted or refused. */
#include "vgpu_backend/backend.h"

CUresult vgpu_backend_mem_claim(struct vgpu_mem_claim *c)
{
    (void)c;
    return CUDA_SUCCESS;
}

void vgpu_backend_mem_settle(struct vgpu_mem_claim *c, CUresult r, uintptr_t handle)
{
    (void)c;
    (void)r;
    (void)handle;
}

void vgpu_backend_mem_release(enum vgpu_mem_kind kind, uintptr_t handle)
{
    (void)kind;
    (void)handle;
}
