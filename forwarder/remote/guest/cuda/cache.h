/*
 * What the guest keeps of the executor's answers (cache.c): the current
 * context and its device, primary contexts' states, devices' attributes,
 * libraries' kernels as functions, functions' and kernels' attributes,
 * occupancies, contexts' limits and ids, devices by ordinal, the driver's
 * version.  The runtime and its
 * libraries ask these around every launch; each would be a round trip.
 */
#pragma once

#include <cuda.h>
#include <stdint.h>

/* After any call that changes the executor's contexts or unloads a module
 * (the generated stubs call it): what depends on them is forgotten. */
void vgpu_remote_context_changed(void);
/* After any call that changes what tuning answers (occupancy, a function's
 * attributes, a context's limits; the generated stubs call it). */
void vgpu_remote_tuned(void);
/* The generation: what was learnt in an older one is not to be used. */
uint64_t vgpu_remote_generation(void);

CUresult vgpu_remote_guest_cuCtxGetCurrent(CUcontext *ctx);
CUresult vgpu_remote_guest_cuCtxGetDevice(CUdevice *dev);
CUresult vgpu_remote_guest_cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx);
CUresult vgpu_remote_guest_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
CUresult vgpu_remote_guest_cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev);
CUresult vgpu_remote_guest_cuKernelGetFunction(CUfunction *f, CUkernel kernel);
CUresult vgpu_remote_guest_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction f, int block_size,
                                                                         size_t smem);
CUresult vgpu_remote_guest_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *blocks, CUfunction f,
                                                                                  int block_size, size_t smem,
                                                                                  unsigned int flags);
CUresult vgpu_remote_guest_cuDriverGetVersion(int *version);
CUresult vgpu_remote_guest_cuCtxGetLimit(size_t *value, CUlimit limit);
CUresult vgpu_remote_guest_cuFuncGetAttribute(int *value, CUfunction_attribute attr, CUfunction f);
CUresult vgpu_remote_guest_cuKernelGetAttribute(int *value, CUfunction_attribute attr, CUkernel kernel, CUdevice dev);
CUresult vgpu_remote_guest_cuFuncSetAttribute(CUfunction f, CUfunction_attribute attr, int value);
CUresult vgpu_remote_guest_cuKernelSetAttribute(CUfunction_attribute attr, int value, CUkernel kernel, CUdevice dev);
CUresult vgpu_remote_guest_cuCtxGetId(CUcontext ctx, unsigned long long *id);
CUresult vgpu_remote_guest_cuDeviceGet(CUdevice *dev, int ordinal);
