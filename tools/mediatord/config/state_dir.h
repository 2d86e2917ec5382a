/*
 * state_dir and the files in it, trusted only when they are the mediator's
 * own: owned by its uid, writable by no one else, not symbolic links
 * (O_NOFOLLOW, then fstat of what was opened), in directories no one else
 * may write (trusted_path.h).  Everything in it is
 * reached through the directory's descriptor, so the path cannot change
 * under the mediator once the directory is checked.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Opens state_dir (making it 0755 if missing) and checks it.  Its
 * descriptor, or -1 with the reason and the fix in err. */
int med_state_dir_open(const char *path, char *err, size_t errlen);

/* Who may write a file besides the mediator: no one, or also its group
 * (a VM's window, which QEMU opens through a group the operator gives it). */
enum med_state_trust { MED_STATE_PRIVATE, MED_STATE_GROUP_WRITABLE };

/*
 * Opens dir/name with flags (O_CREAT creates it 0600, exclusively) and
 * checks what was opened: a regular file of the mediator's uid, written
 * by no one else (or its group, per trust).  The descriptor, -ENOENT when
 * it is missing (and not created), or -1 with the reason and the fix in
 * err (dir_path names it).
 */
int med_state_open(int dir, const char *dir_path, const char *name, int flags, enum med_state_trust trust,
                   char *err, size_t errlen);
