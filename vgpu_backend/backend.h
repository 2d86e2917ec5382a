/*
 * The vGPU backend: the one interface through which hooks ask what a process
 * may see and use.  Hooks translate a driver call into these questions and
 * carry out the answer; the backend decides (from BAR0, the mediator or the
 * environment) and queries the real driver through the forwarder.
 *
 * Today every answer is the physical GPU's (pass-through); the memory quota
 * and the mediator fill these functions with policy.
 */
#pragma once

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/nvml_abi.h"

/* ---- admission (cuInit, nvmlInit) ---- */

/* CUDA_SUCCESS if this process may use its vGPU, else the code cuInit returns. */
CUresult vgpu_backend_cuda_admit(void);
nvmlReturn_t vgpu_backend_nvml_admit(void);

/* ---- what CUDA shows ---- */

CUresult vgpu_backend_device_count(int *count);
CUresult vgpu_backend_device_total_mem(CUdevice dev, size_t *bytes);
/* Free and total memory for the current context's device. */
CUresult vgpu_backend_mem_info(size_t *free_bytes, size_t *total_bytes);

/* ---- what NVML shows ---- */

nvmlReturn_t vgpu_backend_nvml_device_count(unsigned int *count);
/* Turns the physical device's memory figures, as NVML reported them, into
 * the vGPU's. */
void vgpu_backend_nvml_memory_view(nvmlDevice_t dev, unsigned long long *total, unsigned long long *free_bytes,
                                   unsigned long long *used);

/* ---- device memory accounting ---- */

enum vgpu_mem_kind {
    VGPU_MEM_LINEAR,   /* cuMemAlloc, cuMemAllocPitch */
    VGPU_MEM_MANAGED,  /* cuMemAllocManaged */
    VGPU_MEM_ASYNC,    /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
    VGPU_MEM_PHYSICAL, /* cuMemCreate */
    VGPU_MEM_ARRAY,    /* cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate */
};

/* One allocation in flight: claimed before the driver call, settled after. */
struct vgpu_mem_claim {
    enum vgpu_mem_kind kind;
    int device;     /* physical ordinal, or -1 for the current context's */
    size_t bytes;
};

/* May the caller take c->bytes more?  CUDA_SUCCESS or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult vgpu_backend_mem_claim(struct vgpu_mem_claim *c);
/* The driver answered r; on success handle identifies the allocation. */
void vgpu_backend_mem_settle(struct vgpu_mem_claim *c, CUresult r, uintptr_t handle);
/* The allocation identified by handle was freed. */
void vgpu_backend_mem_release(enum vgpu_mem_kind kind, uintptr_t handle);

/* ---- compute ---- */

/* Called before each kernel or graph launch on stream. */
CUresult vgpu_backend_launch_admit(CUstream stream);
