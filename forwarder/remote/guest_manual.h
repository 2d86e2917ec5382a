/* The remote driver's hand-written calls, the guest's side (guest_manual.c; listed in guest_manual.list). */
#pragma once

#include <cuda.h>
#include <stddef.h>

CUresult vgpu_remote_guest_cuGetErrorName(CUresult error, const char **pStr);
CUresult vgpu_remote_guest_cuGetErrorString(CUresult error, const char **pStr);
CUresult vgpu_remote_guest_cuModuleLoadData(CUmodule *module, const void *image);
CUresult vgpu_remote_guest_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult vgpu_remote_guest_cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n);
CUresult vgpu_remote_guest_cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n);
CUresult vgpu_remote_guest_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                          unsigned bz, unsigned shmem, CUstream stream, void **params, void **extra);
CUresult vgpu_remote_guest_cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                               CUdriverProcAddressQueryResult *status);
CUresult vgpu_remote_guest_cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);
CUresult vgpu_remote_guest_cuMemAllocHost_v2(void **pp, size_t n);
CUresult vgpu_remote_guest_cuMemAllocHost(void **pp, unsigned int n);
CUresult vgpu_remote_guest_cuMemHostAlloc(void **pp, size_t n, unsigned int flags);
CUresult vgpu_remote_guest_cuMemFreeHost(void *p);
