/*
 * The directory of this user's own where its default vGPU windows
 * (settings.h) and its standalone compute pages (sched_page.h) live:
 * /dev/shm/vgpu-UID, mode 0700.  /dev/shm is everyone's, so another user
 * can make that name first; such a directory is never used (its owner
 * could read and rewrite this user's limits), and never blocks this user
 * either: the first /dev/shm/vgpu-UID.SUFFIX that is this user's own, or
 * else the first of .1 to .64 that is free, or else one named by mkdtemp,
 * is used instead, said by each process.  Every process of the user takes
 * the same one: one that exists already comes before a free name, and
 * before vgpu-UID itself once another user's directory there is gone.
 */
#pragma once

#include <stddef.h>

/* Where /dev/shm is (the tests give a private one through a mount namespace). */
#define VGPU_USER_DIR_ROOT "/dev/shm"

/*
 * This process's user's directory (resolved once per process, made if
 * missing): 0 with its path in out, or -1 with why in err (a directory of
 * this user's that others may write, or no name left to take).
 */
int vgpu_user_dir(char *out, size_t len, char *err, size_t errlen);
