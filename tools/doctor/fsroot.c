/* Rooted paths; see fsroot.h. */
#define _GNU_SOURCE
#include "tools/doctor/fsroot.h"

#include "common/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Linux's limit on symlinks followed in one lookup. */
#define MAX_LINKS 40

int doc_fs_init(struct doc_fs *fs, const char *root, char *err, size_t errlen)
{
    fs->root[0] = '\0';
    if (!root || !*root || strcmp(root, "/") == 0)
        return 0;
    if (!realpath(root, fs->root))
        return vgpu_fail(err, errlen, "--root %s: %s", root, strerror(errno));
    if (strcmp(fs->root, "/") == 0)
        fs->root[0] = '\0';
    return 0;
}

const char *doc_fs_path(const struct doc_fs *fs, const char *path, char *out, size_t len)
{
    snprintf(out, len, "%s%s", fs->root, path);
    return out;
}

bool doc_fs_exists(const struct doc_fs *fs, const char *path)
{
    char full[PATH_MAX * 2];
    struct stat st;
    return lstat(doc_fs_path(fs, path, full, sizeof(full)), &st) == 0;
}

/* Drops the last component of the canonical path p ("/" stays). */
static void drop_last(char *p)
{
    char *slash = strrchr(p, '/');
    if (slash)
        *slash = '\0';
}

int doc_fs_resolve(const struct doc_fs *fs, const char *path, char *out, size_t len)
{
    char done[PATH_MAX] = "", todo[PATH_MAX * 2];
    int links = 0;
    snprintf(todo, sizeof(todo), "%s", path);
    char *rest = todo;
    while (*rest) {
        char *slash = strchr(rest, '/');
        size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
        char part[NAME_MAX + 1];
        if (n > NAME_MAX) {
            snprintf(out, len, "%s", path);
            return ENAMETOOLONG;
        }
        memcpy(part, rest, n);
        part[n] = '\0';
        rest += n + (slash ? 1 : 0);
        if (n == 0 || strcmp(part, ".") == 0)
            continue;
        if (strcmp(part, "..") == 0) {
            drop_last(done);
            continue;
        }
        char next[PATH_MAX], full[PATH_MAX * 2];
        if ((size_t)snprintf(next, sizeof(next), "%s/%s", done, part) >= sizeof(next)) {
            snprintf(out, len, "%s", path);
            return ENAMETOOLONG;
        }
        struct stat st;
        if (lstat(doc_fs_path(fs, next, full, sizeof(full)), &st) != 0) {
            int e = errno;
            snprintf(out, len, "%s%s%s", next, *rest ? "/" : "", rest);
            return e;
        }
        if (!S_ISLNK(st.st_mode)) {
            snprintf(done, sizeof(done), "%s", next);
            continue;
        }
        char target[PATH_MAX];
        ssize_t t = readlink(full, target, sizeof(target) - 1);
        if (t < 0 || ++links > MAX_LINKS) {
            snprintf(out, len, "%s", next);
            return t < 0 ? errno : ELOOP;
        }
        target[t] = '\0';
        /* The target, then what was left, replace the rest to do. */
        char merged[PATH_MAX * 2];
        snprintf(merged, sizeof(merged), "%s%s%s", target, *rest ? "/" : "", rest);
        snprintf(todo, sizeof(todo), "%s", merged);
        rest = todo;
        if (target[0] == '/')
            done[0] = '\0';
    }
    snprintf(out, len, "%s", done[0] ? done : "/");
    return 0;
}

int doc_fs_read(const struct doc_fs *fs, const char *path, char **data, size_t *len)
{
    char full[PATH_MAX * 2];
    int fd = open(doc_fs_path(fs, path, full, sizeof(full)), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) {
            close(fd);
            return ENOMEM;
        }
        ssize_t n = read(fd, buf + used, cap - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return e;
        }
        if (n == 0)
            break;
        used += (size_t)n;
        if (used == cap) {
            char *bigger = cap < (64u << 20) ? realloc(buf, cap * 2 + 1) : NULL;
            if (!bigger)
                free(buf);
            buf = bigger;
            cap *= 2;
        }
    }
    close(fd);
    buf[used] = '\0';
    *data = buf;
    *len = used;
    return 0;
}
