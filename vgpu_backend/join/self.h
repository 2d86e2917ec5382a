/*
 * The vGPU this process is in: its devices, limits and BAR0, joined once per
 * process (libvgpu-nvml joins through libvgpu-cuda: peer/peer.h).  Where it comes
 * from, first that applies:
 *   1. vgpu-mediatord, when its socket is there (mediator_client.h): the
 *      mediator decides; VGPU_* settings are ignored;
 *   2. a guest window behind a virtual PCI device, in a VM (pci_window.h);
 *   3. the environment, standalone (settings.h).
 * With none of these the process is in no vGPU and vgpu only forwards.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/nvml_abi.h"
#include "vgpu_backend/join/joined.h"

/*
 * Joins once and returns the result (never NULL).  take_slot: enter BAR0's
 * process table (libvgpu-cuda, whose allocations count); libvgpu-nvml only
 * reads.  Thread-safe; the first caller logs a refusal.
 */
const struct vgpu_self *vgpu_self_join(bool take_slot);

/* The joined vGPU when it is on, else NULL.  Cheap: for hot paths. */
struct vgpu_self *vgpu_self_on(void);

/*
 * Before accounting: after fork the child holds no process slot, and takes
 * one in its parent's vGPU (a child that goes on to use CUDA); after a
 * mediator restart the process reattaches.  Cheap when neither happened.
 * False when the process may not take memory: it could not be counted
 * (a fork child that could not rejoin is refused, logged once).
 */
bool vgpu_self_check(struct vgpu_self *self);

/* The vGPU index of an NVML handle of the driver's, or -1. */
int vgpu_self_index_of_nvml(const struct vgpu_self *self, nvmlDevice_t dev);

/* Total memory vGPU device i shows: its quota (read live: the mediator may
 * change it), or the GPU's memory. */
uint64_t vgpu_self_total(const struct vgpu_self *self, int i);
/* Bytes the vGPU uses on device i (every process, overhead included). */
uint64_t vgpu_self_used(const struct vgpu_self *self, int i);
