/*
 * The file system the doctor reads, rooted: --root DIR puts every absolute
 * path below DIR (tests plant faults in a fake root), and a process in a
 * container is read through /proc/PID/root.  Symlinks are followed as the
 * kernel would with the root as "/", so an absolute link stays inside it.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct doc_fs {
    char root[PATH_MAX]; /* "" for the real root */
};

/* Sets fs to root ("" or "/" for the real one); 0, or -1 with err. */
int doc_fs_init(struct doc_fs *fs, const char *root, char *err, size_t errlen);

/* The real path of path (absolute) under fs, in out. */
const char *doc_fs_path(const struct doc_fs *fs, const char *path, char *out, size_t len);

/*
 * Resolves every symlink of path under fs: 0 with the canonical path (as
 * seen inside fs) in out, or an errno (ENOENT for a dangling link) with
 * the path that failed in out.
 */
int doc_fs_resolve(const struct doc_fs *fs, const char *path, char *out, size_t len);

/* Reads a whole file (of /proc too, whose size is 0) under fs: 0 with a
 * malloc'd, NUL-terminated *data and *len, or an errno. */
int doc_fs_read(const struct doc_fs *fs, const char *path, char **data, size_t *len);

/* True if path exists under fs (without following a last symlink). */
bool doc_fs_exists(const struct doc_fs *fs, const char *path);
