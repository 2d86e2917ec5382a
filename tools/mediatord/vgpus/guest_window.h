/*
 * A VM's vGPU window: state_dir/NAME.bar0, one file the size of an
 * ivshmem BAR (256 KiB) that QEMU maps into the guest (docs/guide/vm.md).  The
 * mediator writes its config; the guest's processes write the rest.  It
 * is trusted like the other files in state_dir (state_dir.h), except that
 * its group, QEMU's, may write it, and so may also resize it: the mapping
 * is guarded (window_guard.h), a file found shrunk is retired
 * (med_guest_window_intact), and one found the wrong size when opened is
 * given its size back.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/contract/window/bar0.h"

struct med_guest_window {
    struct vgpu_bar0 *bar; /* the mediator's mapping, or NULL */
    int fd;                /* the file, kept to watch its size; -1 */
    int guard;             /* the mapping's guard (window_guard.h), or -1 */
};

/*
 * Maps vGPU name's window into w, creating it (with regs) if create and it
 * is missing; *created says which.  A window whose header the guest broke
 * is given a whole one again from regs, its process table kept; a file of
 * the wrong size (truncated by someone who may write it) is made its size
 * again, and its header written.  0, or -1 with err.
 */
int med_guest_window_open(int dir, const char *dir_path, const char *name, bool create,
                          const struct vgpu_bar0_config *regs, bool *created, struct med_guest_window *w,
                          char *err, size_t errlen);

/*
 * Whether the window's file still backs the whole mapping.  A file that
 * shrank (or a mapping the guard already replaced) is retired here: the
 * mapping becomes zeroed memory of the mediator's own, and false is
 * returned, with the file's size in *size.
 */
bool med_guest_window_intact(struct med_guest_window *w, long long *size);

/* Unmaps and closes (a closed w is left as after med_guest_window_open failed). */
void med_guest_window_close(struct med_guest_window *w);

/* Removes the file (QEMU keeps any mapping it has). */
void med_guest_window_remove(int dir, const char *name);
