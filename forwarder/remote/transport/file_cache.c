/* A folder of files named by their SHA-256; see file_cache.h. */
#define _GNU_SOURCE
#include "forwarder/remote/transport/file_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int vgpu_file_cache_open(const char *path, const char **why)
{
    *why = NULL;
    /* Not a link (which someone able to write its parent could point at
     * another folder of the user's, whose files trim would remove). */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        if ((errno == ELOOP || errno == ENOTDIR) && lstat(path, &st) == 0) /* O_DIRECTORY's ENOTDIR for a link */
            *why = S_ISLNK(st.st_mode) ? "a link" : "not a folder";
        return -1;
    }
    if (fstat(fd, &st) != 0)
        *why = "unreadable";
    else if (st.st_uid != geteuid())
        *why = "another user's";
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        *why = "writable by others";
    if (*why) {
        close(fd);
        return -1;
    }
    return fd;
}

void vgpu_file_cache_name(const uint8_t hash[VGPU_SHA256_BYTES], char name[VGPU_FILE_CACHE_NAME])
{
    for (int i = 0; i < VGPU_SHA256_BYTES; i++)
        snprintf(name + 2 * i, 3, "%02x", hash[i]);
}

bool vgpu_file_cache_read(int fd, void *p, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t r = read(fd, (char *)p + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        done += (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *p, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t r = write(fd, (const char *)p + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        done += (size_t)r;
    }
    return true;
}

bool vgpu_file_cache_write(int dir, const char *name, const struct iovec *iov, int n)
{
    char aside[128]; /* a thread's own name: two may store one file at once */
    snprintf(aside, sizeof(aside), ".%d.%d.%s", (int)getpid(), (int)gettid(), name);
    int fd = openat(dir, aside, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
        ok = write_all(fd, iov[i].iov_base, iov[i].iov_len);
    ok = close(fd) == 0 && ok;
    if (ok && renameat(dir, aside, dir, name) == 0)
        return true;
    int e = errno;
    (void)unlinkat(dir, aside, 0);
    errno = e;
    return false;
}

static bool is_name(const char *s)
{
    size_t n = strspn(s, "0123456789abcdef");
    return n == VGPU_FILE_CACHE_NAME - 1 && !s[n];
}

/* A file as trim sees it. */
struct kept {
    struct timespec used;
    uint64_t bytes;
    char name[VGPU_FILE_CACHE_NAME];
};

static int older_first(const void *a, const void *b)
{
    const struct timespec *x = &((const struct kept *)a)->used, *y = &((const struct kept *)b)->used;
    if (x->tv_sec != y->tv_sec)
        return x->tv_sec < y->tv_sec ? -1 : 1;
    return x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec;
}

void vgpu_file_cache_trim(int dir, uint64_t most, uint64_t keep, unsigned stale_seconds)
{
    int fd = fcntl(dir, F_DUPFD_CLOEXEC, 0);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    rewinddir(d); /* the copy shares its offset with dir's */
    struct kept *all = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        bool aside = e->d_name[0] == '.';
        if ((!aside && !is_name(e->d_name)) || fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (aside) {
            if (now - st.st_mtime > (time_t)stale_seconds)
                (void)unlinkat(dir, e->d_name, 0);
            continue;
        }
        if (n == cap) {
            struct kept *more = realloc(all, (cap = cap ? 2 * cap : 64) * sizeof(*all));
            if (!more)
                break;
            all = more;
        }
        all[n] = (struct kept){ .used = st.st_mtim, .bytes = (uint64_t)st.st_size };
        memcpy(all[n].name, e->d_name, sizeof(all[n].name));
        total += all[n++].bytes;
    }
    closedir(d);
    if (total > most && n) {
        qsort(all, n, sizeof(*all), older_first);
        for (size_t i = 0; i < n && total > keep; i++)
            if (unlinkat(dir, all[i].name, 0) == 0)
                total -= all[i].bytes;
    }
    free(all);
}
