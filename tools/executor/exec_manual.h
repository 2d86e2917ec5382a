/* The remote driver's hand-written calls, the executor's side (exec_manual.c; listed in exec_manual.list). */
#pragma once

#include "tools/executor/executor.h"

#include <cuda.h>

int vgpu_exec_cuGetErrorName(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGetErrorString(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuModuleLoadData(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuModuleGetFunction(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemcpyHtoD_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemcpyDtoH_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuLaunchKernel(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGetProcAddress_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGetProcAddress(struct vgpu_exec *x, void *fn, const void *req, size_t len);
