/*
 * File primitives for vgpu-setup: every file it writes in /etc replaces the
 * old one in a single rename, so a crash or a full disk leaves either the
 * old file or the new one, never half of either.  Paths here are real
 * paths (already under --root).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

/* What a file is besides its bytes, kept so that it can be put back. */
struct setup_meta {
    mode_t mode;             /* permission bits */
    uid_t uid;
    gid_t gid;
    struct timespec mtime;   /* restored with the bytes; tv_nsec UTIME_OMIT: now */
};

/* Reads path whole into *data (malloc'd, NUL-terminated).  0; -ENOENT if
 * there is no such file; -1 with the reason in err. */
int setup_read(const char *path, char **data, size_t *len, char *err, size_t errlen);

/* Replaces path by a regular file holding data, with meta's mode, owner and
 * mtime (meta NULL: 0644, this process's owner, now).  0, or -1 with err. */
int setup_write_atomic(const char *path, const void *data, size_t len, const struct setup_meta *meta, char *err,
                       size_t errlen);

/* Replaces path by a symbolic link to target.  0, or -1 with err. */
int setup_symlink_atomic(const char *path, const char *target, char *err, size_t errlen);

/* The topmost of path's parent directories that does not exist, into top
 * ("" when they all exist). */
void setup_missing_parent(const char *path, char *top, size_t len);

/* Creates path's missing parent directories, mode 0755.  0, or -1 with err. */
int setup_make_parents(const char *path, char *err, size_t errlen);

/* Removes path, then its parents up to and including top while they are
 * empty ("" top: none).  0, or -1 with err. */
int setup_remove(const char *path, const char *top, char *err, size_t errlen);

/* Same bytes? */
bool setup_same_bytes(const char *a, size_t alen, const char *b, size_t blen);
