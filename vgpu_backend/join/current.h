/*
 * Which device is current: one answer for memory, compute and views.  A
 * launch, an allocation or a cuMemGetInfo without a device goes with the
 * calling thread's current context; its device is known without asking
 * the driver when the context is a device's primary one (the contexts
 * frameworks use), which the quota registers here as it counts them.
 */
#pragma once

#include <cuda.h>

/* CUDA devices whose primary contexts are known. */
#define VGPU_MAX_CUDA_DEVICES 64

/* The vGPU device of the current context's device, with the context and
 * CUDA device when asked (ctx, dev may be NULL); -1 when there is no
 * context or its device is not the vGPU's. */
int vgpu_current_vdev(CUcontext *ctx, CUdevice *dev);

/* The device whose primary context ctx is, or -1: lock-free, for the
 * allocation and launch paths. */
int vgpu_primary_device(CUcontext ctx);

/* Device dev's primary context is ctx now (NULL: released); returns what it
 * was.  The caller (the quota's contexts) serialises changes. */
CUcontext vgpu_primary_set(CUdevice dev, CUcontext ctx);
