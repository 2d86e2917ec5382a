/*
 * Virtual PCI devices a VM's vgpu looks for (docs/guide/vm.md): each device of
 * $VGPU_PCI_ID (default ivshmem's 1af4:1110) under
 * $VGPU_SYSFS_ROOT/bus/pci/devices (default /sys), in address order.
 * Where the operator's settings are locked (/etc/vgpu/vgpu.conf), the
 * environment points at no other tree or device.
 */
#pragma once

#include <stddef.h>

#define VGPU_PCI_IVSHMEM "1af4:1110" /* Red Hat, Inc. Inter-VM shared memory */
#define VGPU_PCI_MEMORY_BAR "resource2" /* ivshmem's shared memory is its BAR 2 */

/* Calls visit(dir, address, ctx) for each such device (dir its sysfs
 * directory) until one returns nonzero, and returns that; 0 when none
 * did or there is no such tree; -1 with err for a malformed VGPU_PCI_ID. */
int vgpu_pci_each(int (*visit)(const char *dir, const char *address, void *ctx), void *ctx, char *err,
                  size_t errlen);

/* A device's BAR at path that this user may not open (errno e): -1, with
 * err saying so and how to give access. */
int vgpu_pci_refused(const char *path, int e, char *err, size_t errlen);

/* The directory vgpu_pci_each scans (for messages). */
const char *vgpu_pci_devices_dir(char *buf, size_t len);
