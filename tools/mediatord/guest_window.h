/*
 * A VM's vGPU window: state_dir/NAME.bar0, one file the size of an
 * ivshmem BAR (256 KiB) that QEMU maps into the guest (docs/vm.md).  The
 * mediator writes its config; the guest's processes write the rest.  A
 * guest cannot resize the host's file; it is trusted like the other files
 * in state_dir (state_dir.h), except that its group, QEMU's, may write it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "vgpu_backend/bar0.h"

/*
 * Maps vGPU name's window, creating it (with regs) if create and it is
 * missing; *created says which.  A window whose header the guest broke is
 * given a whole one again from regs, its process table kept.  The mapping,
 * or NULL with err.
 */
struct vgpu_bar0 *med_guest_window_open(int dir, const char *dir_path, const char *name, bool create,
                                        const struct vgpu_bar0_config *regs, bool *created, char *err,
                                        size_t errlen);

/* Removes the file (QEMU keeps any mapping it has). */
void med_guest_window_remove(int dir, const char *name);
