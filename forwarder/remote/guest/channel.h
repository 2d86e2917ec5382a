/*
 * The guest's side of channels (channels.h): the memory found (VGPU_REMOTE
 * "pci": the vGPU's PCI device; "bar:PATH": a file standing in for its BAR),
 * a channel claimed, its executor awaited, its ring attached; its claim
 * kept alive by a heartbeat and released when the process is done.  One
 * channel a library (CUDA's and NVML's are each their own); the caller
 * serialises calls.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vgpu_ring;

/* Whether where (VGPU_REMOTE's value) names channels. */
bool vgpu_channel_wanted(const char *where);

/* Claims a channel of where's memory and attaches r to its ring (no
 * socket: r polls, and its peer_gone says the executor or its supervisor
 * is gone).  0; or -1 with err saying why, actionably. */
int vgpu_channel_connect(const char *where, struct vgpu_ring *r, char *err, size_t errlen);

/* The claimed channel's bulk (channels.h): the memory's file, where page-
 * locked memory is mapped from (*offset, *size bytes); -1 with none. */
int vgpu_channel_bulk_of(uint64_t *offset, uint64_t *size);

/* The channel is done with (its executor ends). */
void vgpu_channel_release(void);

/* In a child of fork: the parent's channel is the parent's; forgotten,
 * not released. */
void vgpu_channel_forget(void);
