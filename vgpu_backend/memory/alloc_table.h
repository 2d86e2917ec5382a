/*
 * What this process holds: every counted allocation by its handle (device
 * pointer, VMM handle, array), with the device, bytes and context it was
 * counted against, so a free gives back exactly what was taken.  Sharded
 * open-addressing tables, one mutex per shard: the allocation path takes
 * one uncontended lock.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "vgpu_backend/backend.h" /* struct vgpu_alloc: a free in flight carries one */

/*
 * Records a.  Returns 0; 1 when a record of the same handle was there
 * already (a free vgpu did not see), which is then moved to *displaced; -1
 * when out of memory (the allocation then goes unrecorded).
 */
int vgpu_alloc_put(const struct vgpu_alloc *a, struct vgpu_alloc *displaced);
/* Removes and returns the record of (cls, handle); false if none. */
bool vgpu_alloc_take(enum vgpu_alloc_class cls, uintptr_t handle, struct vgpu_alloc *out);
/* Removes every record of ctx, calling fn on each. */
void vgpu_alloc_drop_context(void *ctx, void (*fn)(const struct vgpu_alloc *, void *), void *arg);
