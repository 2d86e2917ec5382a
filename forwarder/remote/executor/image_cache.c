/* The executor's cache of module images; see image_cache.h. */
#define _GNU_SOURCE
#include "forwarder/remote/executor/image_cache.h"

#include "common/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The cache's directory, open (-1: off), and its bound: this process's. */
static int dir = -1;
static uint64_t limit;

bool vgpu_exec_cache_open(void)
{
    if (dir >= 0)
        return true;
    const char *where = getenv("VGPU_REMOTE_IMAGE_CACHE"), *mib = getenv("VGPU_REMOTE_IMAGE_CACHE_MIB");
    char path[4096];
    if (where && strcmp(where, "off") == 0)
        return false;
    if (where && *where)
        snprintf(path, sizeof(path), "%s", where);
    else
        snprintf(path, sizeof(path), "/var/tmp/vgpu-images-%u", (unsigned)geteuid());
    char *end;
    unsigned long long m = mib && *mib ? strtoull(mib, &end, 10) : 0;
    limit = (mib && *mib && !*end && m ? m : 4096ull) << 20;
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        vgpu_warn("executor: no cache of module images in %s (%s): guests send every image whole", path,
                  strerror(errno));
        return false;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
        vgpu_warn("executor: %s is not a directory of this user's alone (uid %u, none but it may write): no cache "
                  "of module images, guests send every image whole",
                  path, (unsigned)geteuid());
        if (fd >= 0)
            close(fd);
        return false;
    }
    dir = fd;
    return true;
}

static void name_of(const uint8_t hash[VGPU_SHA256_BYTES], char name[2 * VGPU_SHA256_BYTES + 1])
{
    for (int i = 0; i < VGPU_SHA256_BYTES; i++)
        snprintf(name + 2 * i, 3, "%02x", hash[i]);
}

char *vgpu_exec_cache_get(const uint8_t hash[VGPU_SHA256_BYTES], size_t *n)
{
    char name[2 * VGPU_SHA256_BYTES + 1];
    name_of(hash, name);
    int fd = dir >= 0 ? openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *image = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (image && got < (size_t)st.st_size) {
        ssize_t r = read(fd, image + got, (size_t)st.st_size - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    futimens(fd, NULL); /* used: the last to go */
    close(fd);
    if (!image || got != (size_t)st.st_size) {
        free(image);
        return NULL;
    }
    image[got] = 0;
    *n = got;
    return image;
}

/* A file of the cache, as trim sees it. */
struct entry {
    struct timespec used;
    uint64_t size;
    char name[2 * VGPU_SHA256_BYTES + 1];
};

static int older(const void *a, const void *b)
{
    const struct timespec *x = &((const struct entry *)a)->used, *y = &((const struct entry *)b)->used;
    return x->tv_sec != y->tv_sec ? (x->tv_sec < y->tv_sec ? -1 : 1)
                                  : (x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec);
}

/* One look at the directory: the files used least lately go until the
 * cache holds at most limit bytes, and files half written by an executor
 * that died (".PID.HASH") an hour ago go too. */
static void trim(void)
{
    int fd = fcntl(dir, F_DUPFD_CLOEXEC, 0);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct entry *e = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (struct dirent *de; (de = readdir(d));) {
        struct stat st;
        if (fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (de->d_name[0] == '.') {
            if (st.st_mtim.tv_sec + 3600 < now.tv_sec)
                unlinkat(dir, de->d_name, 0);
            continue;
        }
        if (strlen(de->d_name) != 2 * VGPU_SHA256_BYTES)
            continue;
        if (n == cap) {
            struct entry *grown = realloc(e, (cap = cap ? 2 * cap : 64) * sizeof(*e));
            if (!grown)
                break;
            e = grown;
        }
        e[n] = (struct entry){ .used = st.st_mtim, .size = (uint64_t)st.st_size };
        memcpy(e[n].name, de->d_name, sizeof(e[n].name));
        total += e[n++].size;
    }
    closedir(d);
    qsort(e, n, sizeof(*e), older);
    for (size_t i = 0; i < n && total > limit; i++)
        if (unlinkat(dir, e[i].name, 0) == 0)
            total -= e[i].size;
    free(e);
}

void vgpu_exec_cache_put(const void *image, size_t n)
{
    if (dir < 0 || n > limit)
        return;
    uint8_t hash[VGPU_SHA256_BYTES];
    char name[2 * VGPU_SHA256_BYTES + 1], tmp[128];
    vgpu_sha256(image, n, hash);
    name_of(hash, name);
    if (faccessat(dir, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return; /* another executor stored it */
    /* A lane's own name: two lanes may store one image at once. */
    snprintf(tmp, sizeof(tmp), ".%d.%d.%s", (int)getpid(), (int)gettid(), name);
    int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    size_t done = 0;
    while (fd >= 0 && done < n) {
        ssize_t w = write(fd, (const char *)image + done, n - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    if (fd >= 0 && close(fd) == 0 && done == n && renameat(dir, tmp, dir, name) == 0) {
        vgpu_debug("executor: an image of %zu bytes cached as %.16s...", n, name);
        trim();
        return;
    }
    unlinkat(dir, tmp, 0);
}
