/*
 * Which vGPU device each CUDA device is.  The vGPU's GPUs are shown to CUDA
 * by setting CUDA_VISIBLE_DEVICES (to their UUIDs) before the driver's
 * cuInit, so the driver itself hides the others; after cuInit each CUDA
 * ordinal is matched to its vGPU device by UUID.
 */
#pragma once

#include <cuda.h>

#include "vgpu_backend/join/self.h"

/* Rewrites CUDA_VISIBLE_DEVICES for the vGPU (before the driver's cuInit).
 * A CUDA_VISIBLE_DEVICES the user set selects among the vGPU's devices. */
void vgpu_cuda_devices_restrict(const struct vgpu_self *self);

/* Matches CUDA devices to vGPU devices (once, after a successful cuInit). */
void vgpu_cuda_devices_map(const struct vgpu_self *self);

/* The vGPU device index of a CUDA device, or -1 (not the vGPU's). */
int vgpu_cuda_vgpu_index(CUdevice dev);
