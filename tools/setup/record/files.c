/* See files.h. */
#define _GNU_SOURCE
#include "tools/setup/record/files.h"

#include "common/error.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int setup_read(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return -ENOENT;
        return vgpu_fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) {
            close(fd);
            return vgpu_fail(err, errlen, "cannot read %s: out of memory", path);
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return vgpu_fail(err, errlen, "cannot read %s: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap) {
            cap *= 2;
            char *bigger = realloc(buf, cap + 1);
            if (!bigger)
                free(buf);
            buf = bigger;
        }
    }
    close(fd);
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

/* The directory's entry must reach the disk too, or a crash can lose the rename. */
static void sync_dir_of(const char *path)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s", path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* A new file beside path, for a rename over it: a descriptor, or -1 with
 * err.  Its name ends in neither .conf, .yaml nor .json, so systemd,
 * ldconfig and a CDI runtime reading the directory meanwhile never take a
 * half-written file. */
static int temp_beside(const char *path, char *tmp, size_t len, char *err, size_t errlen)
{
    if ((size_t)snprintf(tmp, len, "%s.vgpu-setup.XXXXXX", path) >= len)
        return vgpu_fail(err, errlen, "path too long: %s", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return vgpu_fail(err, errlen, "cannot create a file beside %s: %s", path, strerror(errno));
    return fd;
}

static int write_all(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t w = write(fd, data, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        data += w;
        len -= (size_t)w;
    }
    return 0;
}

int setup_write_atomic(const char *path, const void *data, size_t len, const struct setup_meta *meta, char *err,
                       size_t errlen)
{
    char tmp[PATH_MAX];
    int fd = temp_beside(path, tmp, sizeof(tmp), err, errlen);
    if (fd < 0)
        return -1;
    const char *step = "write";
    int ok = write_all(fd, data, len) == 0;
    /* The owner before the mode: chown clears set-user-ID and set-group-ID bits. */
    struct stat st;
    if (ok && meta && fstat(fd, &st) == 0 && (st.st_uid != meta->uid || st.st_gid != meta->gid) &&
        !(ok = fchown(fd, meta->uid, meta->gid) == 0))
        step = "set the owner of";
    if (ok && !(ok = fchmod(fd, meta ? meta->mode : 0644) == 0))
        step = "set the mode of";
    if (ok && meta && meta->mtime.tv_nsec != UTIME_OMIT) {
        struct timespec times[2] = { { .tv_nsec = UTIME_OMIT }, meta->mtime };
        if (!(ok = futimens(fd, times) == 0))
            step = "set the time of";
    }
    if (ok && !(ok = fsync(fd) == 0))
        step = "sync";
    int e = errno;
    close(fd);
    if (ok && !(ok = rename(tmp, path) == 0)) {
        e = errno;
        step = "rename a new file over";
    }
    if (!ok) {
        unlink(tmp);
        return vgpu_fail(err, errlen, "cannot %s %s: %s", step, path, strerror(e));
    }
    sync_dir_of(path);
    return 0;
}

int setup_symlink_atomic(const char *path, const char *target, char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    /* A temporary file's name, freed for the link: a name no one else uses. */
    int fd = temp_beside(path, tmp, sizeof(tmp), err, errlen);
    if (fd < 0)
        return -1;
    close(fd);
    unlink(tmp);
    if (symlink(target, tmp) != 0)
        return vgpu_fail(err, errlen, "cannot create the symbolic link %s: %s", path, strerror(errno));
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return vgpu_fail(err, errlen, "cannot rename a new link over %s: %s", path, strerror(e));
    }
    sync_dir_of(path);
    return 0;
}

void setup_missing_parent(const char *path, char *top, size_t len)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    top[0] = '\0';
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            return;
        *slash = '\0';
        struct stat st;
        if (lstat(dir, &st) == 0)
            return;
        snprintf(top, len, "%s", dir);
    }
}

int setup_make_parents(const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char was = *p;
            *p = '\0';
            if (mkdir(dir, 0755) != 0 && errno != EEXIST)
                return vgpu_fail(err, errlen, "cannot create the directory %s: %s", dir, strerror(errno));
            *p = was;
            if (!was)
                return 0;
        }
    }
}

int setup_remove(const char *path, const char *top, char *err, size_t errlen)
{
    if (unlink(path) != 0 && errno != ENOENT)
        return vgpu_fail(err, errlen, "cannot remove %s: %s", path, strerror(errno));
    sync_dir_of(path);
    if (!top[0])
        return 0;
    size_t toplen = strlen(top);
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    /* Only directories at or below top, and only empty ones (rmdir refuses the rest). */
    for (char *slash = strrchr(dir, '/'); slash && slash != dir; slash = strrchr(dir, '/')) {
        *slash = '\0';
        bool below_top = strncmp(dir, top, toplen) == 0 && (dir[toplen] == '\0' || dir[toplen] == '/');
        if (!below_top || rmdir(dir) != 0)
            break;
    }
    return 0;
}

bool setup_same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && memcmp(a, b, alen) == 0;
}
