/* The executor's cache of module images; see image_cache.h. */
#define _GNU_SOURCE
#include "forwarder/remote/executor/image_cache.h"

#include "common/log.h"
#include "forwarder/remote/transport/file_cache.h"

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
    const char *why;
    int fd = vgpu_file_cache_open(path, &why);
    if (fd < 0) {
        vgpu_warn("executor: %s is not a directory of this user's alone (uid %u, none but it may write): no cache "
                  "of module images, guests send every image whole",
                  path, (unsigned)geteuid());
        return false;
    }
    dir = fd;
    return true;
}

char *vgpu_exec_cache_get(const uint8_t hash[VGPU_SHA256_BYTES], size_t *n)
{
    char name[VGPU_FILE_CACHE_NAME];
    vgpu_file_cache_name(hash, name);
    int fd = dir >= 0 ? openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    size_t got = (size_t)st.st_size;
    char *image = malloc(got + 1);
    bool whole = image && vgpu_file_cache_read(fd, image, got);
    futimens(fd, NULL); /* used: the last to go */
    close(fd);
    if (!whole) {
        free(image);
        return NULL;
    }
    image[got] = 0;
    *n = got;
    return image;
}

/* Files half written by an executor that died go after this. */
#define STALE_SECONDS 3600

void vgpu_exec_cache_put(const void *image, size_t n)
{
    if (dir < 0 || n > limit)
        return;
    uint8_t hash[VGPU_SHA256_BYTES];
    char name[VGPU_FILE_CACHE_NAME];
    vgpu_sha256(image, n, hash);
    vgpu_file_cache_name(hash, name);
    if (faccessat(dir, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return; /* another executor stored it */
    struct iovec v = { (void *)image, n };
    if (vgpu_file_cache_write(dir, name, &v, 1)) {
        vgpu_debug("executor: an image of %zu bytes cached as %.16s...", n, name);
        vgpu_file_cache_trim(dir, limit, limit, STALE_SECONDS);
    }
}
