/*
 * In a VM, a vGPU's BAR0 is the shared-memory BAR of a virtual PCI device:
 * QEMU's ivshmem-plain backed by the host mediator's guest window file
 * (docs/guide/vm.md).  The guest finds it by scanning $VGPU_SYSFS_ROOT/bus/pci/
 * devices (default /sys) for $VGPU_PCI_ID (default ivshmem's 1af4:1110)
 * and maps the device's memory BAR (resource2).
 */
#pragma once

#include <stddef.h>

#include "common/contract/window/bar0.h"

enum vgpu_pci_answer {
    VGPU_PCI_FOUND = 0,
    VGPU_PCI_NONE = 1,    /* no such device holds a vgpu window */
    VGPU_PCI_ERROR = -1,  /* one does, but it cannot be used: err says why */
};

/* Finds and attaches to the guest window ($VGPU_NAME picks among several). */
int vgpu_pci_attach(struct vgpu_bar0_map *m, char *err, size_t errlen);
