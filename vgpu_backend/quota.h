/*
 * The quota step shared by every path that takes device memory: take bytes
 * on a vGPU device within its limit, and when that fails, first return dead
 * processes' and idle pools' memory, then refuse with an info line.
 */
#pragma once

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "vgpu_backend/self.h"

/* The current context and its device: 0, or -1 when there is none. */
int vgpu_current_device(CUcontext *ctx, CUdevice *dev);

/* The device whose primary context ctx is, or -1 (contexts.c): lock-free,
 * so the allocation path need not ask the driver. */
int vgpu_primary_device(CUcontext ctx);

/* Takes bytes on vGPU device vdev; false (and logged) past the quota. */
bool vgpu_quota_take(struct vgpu_self *self, int vdev, uint64_t bytes, const char *what);

/* ---- pools.c: stream-ordered allocations count their pool's reserve ---- */

/* What an allocation of bytes may add to its pool's reserve (pool NULL:
 * the device's current pool). */
uint64_t vgpu_pool_growth(CUmemoryPool pool, CUdevice dev, uint64_t bytes);
/* After an allocation from pool: count the pool's reserve as it is now. */
void vgpu_pool_settle(struct vgpu_self *self, CUmemoryPool pool, CUdevice dev, int vdev);
/* Counts every pool's reserve again. */
void vgpu_pools_resync_all(struct vgpu_self *self);
/* Counts every device's graph memory reserve again (graph_mem.c). */
void vgpu_graph_mem_resync_all(struct vgpu_self *self);

/* ---- limits.c: what a context's limits reserve ---- */

/* ctx is gone: what its limits reserved is given back. */
void vgpu_limits_context_gone(struct vgpu_self *self, CUcontext ctx);
