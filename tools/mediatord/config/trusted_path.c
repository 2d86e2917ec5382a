/* What the mediator trusts, beyond other users' reach; see trusted_path.h. */
#define _GNU_SOURCE
#include "tools/mediatord/config/trusted_path.h"

#include "common/error.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool owner_ok(uid_t uid)
{
    return uid == 0 || uid == geteuid();
}

int med_trusted_file(const struct stat *st, const char *what, const char *path, char *err, size_t errlen)
{
    if (!owner_ok(st->st_uid))
        return vgpu_fail(err, errlen, "%s: the %s is owned by uid %u, neither root nor vgpu-mediatord's own (uid %u): "
                         "whoever owns it decides every vGPU; chown root %s", path, what, (unsigned)st->st_uid,
                         (unsigned)geteuid(), path);
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return vgpu_fail(err, errlen, "%s: the %s is writable by group or others (mode %04o): whoever may write it "
                         "decides every vGPU; chmod go-w %s", path, what, (unsigned)(st->st_mode & 07777), path);
    return 0;
}

/* dir (resolved) and each directory above it, up to /. */
static int walk_up(char *dir, const char *path, const char *what, char *err, size_t errlen)
{
    for (;;) {
        struct stat st;
        if (stat(dir, &st) != 0)
            return vgpu_fail(err, errlen, "%s: cannot check %s, a directory of the %s: %s", path, dir, what,
                             strerror(errno));
        if (!owner_ok(st.st_uid))
            return vgpu_fail(err, errlen, "%s: the %s is in %s, which uid %u owns: whoever owns a directory on its way "
                             "can replace it; move it to a directory of root's", path, what, dir, (unsigned)st.st_uid);
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
            return vgpu_fail(err, errlen, "%s: the %s is in %s, which group or others may write (mode %04o): they "
                             "can replace it; chmod go-w %s", path, what, dir, (unsigned)(st.st_mode & 07777), dir);
        if (strcmp(dir, "/") == 0)
            return 0;
        char *last = strrchr(dir, '/');
        if (last == dir)
            last[1] = '\0';
        else
            *last = '\0';
    }
}

/* The directory part of path (".": none), resolved by the kernel. */
static int resolved_parent(const char *path, char *out, const char *what, char *err, size_t errlen)
{
    char parent[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(parent, sizeof(parent), ".");
    else if (slash == path)
        snprintf(parent, sizeof(parent), "/");
    else
        snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
    if (!realpath(parent, out))
        return vgpu_fail(err, errlen, "%s: cannot resolve the directory of the %s: %s", path, what, strerror(errno));
    return 0;
}

int med_trusted_dirs(const char *path, const char *what, char *err, size_t errlen)
{
    /* The directories of the name given (where a link to it could be
     * swapped), and, where that is a link, those of the file it names:
     * a link on the way cannot hide whose directories those are. */
    char dir[PATH_MAX], real[PATH_MAX];
    if (resolved_parent(path, dir, what, err, errlen) != 0 || walk_up(dir, path, what, err, errlen) != 0)
        return -1;
    if (!realpath(path, real))
        return 0; /* nothing there yet (a state_dir to be made): its parent is what was checked */
    return resolved_parent(real, dir, what, err, errlen) != 0 ? -1 : walk_up(dir, path, what, err, errlen);
}
