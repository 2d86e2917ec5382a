/*
 * The quota step shared by every path that takes device memory: take bytes
 * on a vGPU device within its limit, and when that fails, first count again
 * what can be counted lower (dead processes' memory, the idle reserves the
 * driver keeps), then refuse with an info line.
 */
#pragma once

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "vgpu_backend/join/self.h"

/* Takes bytes on vGPU device vdev; false (and logged) past the quota. */
bool vgpu_quota_take(struct vgpu_self *self, int vdev, uint64_t bytes, const char *what);

/*
 * A reserve the driver keeps that can be counted again before the quota
 * refuses (pools.c, graph_mem.c): each registers its recount when it first
 * counts something, so that the quota step calls it without depending on
 * it.  Thread-safe; registering the same function twice registers it once.
 */
typedef void (*vgpu_quota_recount)(struct vgpu_self *self);
void vgpu_quota_add_recount(vgpu_quota_recount fn);

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
