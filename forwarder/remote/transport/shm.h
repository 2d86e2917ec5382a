/*
 * Memory a guest and its executor share (docs/design/remote.md): sealed memfds
 * (the ring, page-locked blocks) and address ranges reserved exactly where
 * asked (the executor's window for page-locked blocks, on both sides).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A memfd of length bytes (whole pages), sealed so that neither side can
 * shrink it under the other's mapping nor grow it, mapped shared and
 * read-write: at at (which it replaces) or, with at NULL, where the kernel
 * puts it.  The mapping and *fd; or MAP_FAILED with errno, nothing left
 * open (at at, what was there may be gone: vgpu_shm_reserve it again). */
void *vgpu_shm_sealed(const char *name, size_t length, void *at, int *fd);

/* length bytes at at reserved (inaccessible, no memory behind them)
 * exactly there and never over a mapping: whether they were. */
bool vgpu_shm_reserve_at(void *at, size_t length);

/* length bytes at at made a reservation again, whatever was mapped there:
 * 0, or -1 with errno. */
int vgpu_shm_reserve(void *at, size_t length);
