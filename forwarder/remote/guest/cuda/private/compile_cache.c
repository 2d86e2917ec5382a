/*
 * NVRTC's compute cache (the private table da9151d3-...), answered in the
 * guest: the programs NVRTC compiled, kept on the guest's own disk.
 *
 * NVRTC asks the driver for this table when it first compiles.  Natively
 * the driver keeps each compiled program in its compute cache
 * (CUDA_CACHE_PATH), so a source compiled again with the same options is
 * read back instead of compiled: cuDNN's runtime-compiled engines compile
 * the same sources for each new plan, and a compile costs tenths of a
 * second.  Nothing of it needs the GPU, so nothing crosses: the guest keeps
 * the entries itself (docs/design/remote.md, "NVRTC's compute cache").
 *
 * The table, as CUDA 13.0's NVRTC calls it (a table's UUID fixes its
 * layout: one driver serves every NVRTC that asks; r580's is 56 bytes):
 *   [0] its size in bytes
 *   [1] key(out, kind, source, source size, options, host, build, a, b): a
 *       key for those inputs (a handle NVRTC passes to the next three)
 *   [2] free_key(key)
 *   [3] lookup(key, flags, &data, &size): 0 and the entry's bytes (which
 *       NVRTC gives back to [6]) where one is kept; NVRTC compiles otherwise
 *   [4] store(key, flags, data, size)
 *   [5] not used by NVRTC: refused
 *   [6] free_data(data)
 *
 * An entry is a file named by the key's SHA-256 in the cache's folder:
 * $CUDA_CACHE_PATH/vgpu-nvrtc, else $XDG_CACHE_HOME/vgpu/nvrtc, else
 * ~/.cache/vgpu/nvrtc; a folder that is a link, is not the user's own, or
 * that others may write, is not used.  A file holds its key and the SHA-256 of its
 * bytes, which a lookup checks; it is written aside and renamed into place,
 * so a reader sees a whole entry or none.  The folder is kept under
 * CUDA_CACHE_MAXSIZE bytes (256 MiB by default, at most 4 GiB), the entries
 * read least recently removed first (down to nine tenths of it);
 * CUDA_CACHE_DISABLE=1 turns the cache off.  A failure to store is not the
 * compile's: NVRTC is told the entry was stored, and the failure is logged
 * at debug.
 */
#include "forwarder/remote/guest/cuda/manual.h"

#include "common/log.h"
#include "forwarder/remote/transport/file_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_MAX_BYTES (256ull << 20)
#define LARGEST_MAX_BYTES (4ull << 30)
/* A file a writer left aside for longer than this is its crash's. */
#define STALE_SECONDS 600

static const char magic[8] = { 'V', 'G', 'P', 'U', 'N', 'R', 'C', '1' };

struct entry_header {
    char magic[8];
    uint8_t key[VGPU_SHA256_BYTES];
    uint64_t size;
    uint8_t digest[VGPU_SHA256_BYTES]; /* of the entry's bytes */
};

/* A key: the inputs' hash, and the cache's folder as it was when the key
 * was made (-1: no cache). */
struct cache_key {
    uint8_t digest[VGPU_SHA256_BYTES];
    char name[VGPU_FILE_CACHE_NAME];
    int dir;
    uint64_t max_bytes;
};

/* ---- the folder ---- */

/* "A/B" into out, or false where it does not fit. */
static bool join(char *out, size_t n, const char *a, const char *b)
{
    int w = snprintf(out, n, "%s/%s", a, b);
    return w > 0 && (size_t)w < n;
}

static bool cache_path(char *out, size_t n)
{
    const char *path = getenv("CUDA_CACHE_PATH");
    if (path && *path)
        return join(out, n, path, "vgpu-nvrtc");
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && *xdg == '/')
        return join(out, n, xdg, "vgpu/nvrtc");
    const char *home = getenv("HOME");
    char buf[4096];
    struct passwd pw, *found = NULL;
    if ((!home || !*home) && getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &found) == 0 && found)
        home = found->pw_dir;
    return home && *home && join(out, n, home, ".cache/vgpu/nvrtc");
}

/* mkdir -p, each folder made the user's alone. */
static void make_folders(char *path)
{
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            (void)mkdir(path, 0700);
            *p = '/';
        }
    (void)mkdir(path, 0700);
}

static void warn_unsafe(const char *path, const char *why)
{
    static int said; /* once a process; the warning is the whole state */
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        vgpu_warn("remote GPU: NVRTC's compute cache at %s is %s: not used (programs are compiled each time); "
                  "set CUDA_CACHE_PATH to a folder of your own (docs/design/remote.md)",
                  path, why);
}

/* The cache's folder, opened, or -1 where there is none to use. */
static int open_folder(void)
{
    const char *off = getenv("CUDA_CACHE_DISABLE");
    if (off && atoi(off) != 0)
        return -1;
    char path[4096];
    if (!cache_path(path, sizeof(path)))
        return -1;
    make_folders(path);
    const char *why;
    int dir = vgpu_file_cache_open(path, &why);
    if (dir < 0 && why)
        warn_unsafe(path, why);
    else if (dir < 0)
        vgpu_debug("remote GPU: NVRTC's compute cache: %s: %s", path, strerror(errno));
    return dir;
}

static uint64_t max_bytes(void)
{
    const char *s = getenv("CUDA_CACHE_MAXSIZE");
    char *end;
    unsigned long long v = s ? strtoull(s, &end, 10) : 0;
    if (!s || end == s || *end || v == 0)
        return DEFAULT_MAX_BYTES;
    return v < LARGEST_MAX_BYTES ? v : LARGEST_MAX_BYTES;
}

/* ---- keys ---- */

static size_t put(uint8_t *at, const void *p, size_t n)
{
    uint64_t len = n;
    memcpy(at, &len, sizeof(len));
    if (n)
        memcpy(at + sizeof(len), p, n);
    return sizeof(len) + n;
}

static CUresult make_key(struct cache_key **out, int kind, const void *source, unsigned source_size,
                         const char *options, const char *host, const char *build, int a, int b)
{
    if (!out || (!source && source_size))
        return CUDA_ERROR_INVALID_VALUE;
    static const char domain[] = "vgpu nvrtc compute cache 1";
    const char *text[3] = { options ? options : "", host ? host : "", build ? build : "" };
    size_t n = sizeof(domain) + 4 * sizeof(uint64_t) + source_size + 3 * sizeof(int);
    for (int i = 0; i < 3; i++)
        n += strlen(text[i]);
    uint8_t *all = malloc(n), *at = all;
    struct cache_key *key = malloc(sizeof(*key));
    if (!all || !key) {
        free(all);
        free(key);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(at, domain, sizeof(domain));
    at += sizeof(domain);
    int ints[3] = { kind, a, b };
    memcpy(at, ints, sizeof(ints));
    at += sizeof(ints);
    at += put(at, source, source_size);
    for (int i = 0; i < 3; i++)
        at += put(at, text[i], strlen(text[i]));
    vgpu_sha256(all, (size_t)(at - all), key->digest);
    free(all);
    vgpu_file_cache_name(key->digest, key->name);
    key->dir = open_folder();
    key->max_bytes = max_bytes();
    *out = key;
    return CUDA_SUCCESS;
}

static CUresult free_key(struct cache_key *key)
{
    if (key && key->dir >= 0)
        close(key->dir);
    free(key);
    return CUDA_SUCCESS;
}

/* ---- entries ---- */

/* Whether the open file fd is a whole entry of key's, within the cache's
 * bound: its header, into h. */
static bool entry_fits(int fd, const struct cache_key *key, struct entry_header *h)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (uint64_t)st.st_size >= sizeof(*h) &&
           (uint64_t)st.st_size - sizeof(*h) <= UINT32_MAX && (uint64_t)st.st_size <= key->max_bytes &&
           vgpu_file_cache_read(fd, h, sizeof(*h)) &&
           memcmp(h->magic, magic, sizeof(magic)) == 0 && memcmp(h->key, key->digest, sizeof(h->key)) == 0 &&
           h->size == (uint64_t)st.st_size - sizeof(*h);
}

/* The entry's bytes, checked whole, or NULL. */
static void *read_entry(const struct cache_key *key, unsigned *size)
{
    int fd = openat(key->dir, key->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC); /* a FIFO: no wait */
    if (fd < 0)
        return NULL;
    struct entry_header h;
    uint8_t digest[VGPU_SHA256_BYTES];
    void *data = entry_fits(fd, key, &h) ? malloc(h.size ? h.size : 1) : NULL;
    if (data && vgpu_file_cache_read(fd, data, h.size)) {
        vgpu_sha256(data, h.size, digest);
        if (memcmp(digest, h.digest, sizeof(digest)) == 0) {
            *size = (unsigned)h.size;
            (void)futimens(fd, NULL); /* read most recently: removed last */
            close(fd);
            return data;
        }
    }
    free(data);
    close(fd);
    return NULL;
}

static CUresult lookup(struct cache_key *key, unsigned flags, void **data, unsigned *size)
{
    if (!key || !data || !size)
        return CUDA_ERROR_INVALID_VALUE;
    *data = NULL;
    *size = 0;
    if (flags || key->dir < 0)
        return CUDA_ERROR_NOT_FOUND;
    *data = read_entry(key, size);
    vgpu_debug("remote GPU: NVRTC's compute cache: %s %s", *data ? "hit" : "miss", key->name);
    return *data ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

static bool write_entry(const struct cache_key *key, const void *data, unsigned size)
{
    struct entry_header h = { .size = size };
    memcpy(h.magic, magic, sizeof(magic));
    memcpy(h.key, key->digest, sizeof(h.key));
    vgpu_sha256(data, size, h.digest);
    struct iovec v[2] = { { &h, sizeof(h) }, { (void *)data, size } };
    return vgpu_file_cache_write(key->dir, key->name, v, 2);
}

static CUresult store(struct cache_key *key, unsigned flags, const void *data, unsigned size)
{
    if (!key || (!data && size))
        return CUDA_ERROR_INVALID_VALUE;
    if (flags || key->dir < 0)
        return CUDA_SUCCESS;
    if (sizeof(struct entry_header) + (uint64_t)size > key->max_bytes) {
        vgpu_debug("remote GPU: NVRTC's compute cache: %s not kept (%u bytes, over CUDA_CACHE_MAXSIZE)", key->name,
                   size);
        return CUDA_SUCCESS;
    }
    if (!write_entry(key, data, size)) {
        vgpu_debug("remote GPU: NVRTC's compute cache: %s not kept: %s", key->name, strerror(errno));
        return CUDA_SUCCESS;
    }
    vgpu_debug("remote GPU: NVRTC's compute cache: stored %s (%u bytes)", key->name, size);
    /* Down to nine tenths of the bound, so that the stores after it only look. */
    vgpu_file_cache_trim(key->dir, key->max_bytes, key->max_bytes / 10 * 9, STALE_SECONDS);
    return CUDA_SUCCESS;
}

static CUresult not_used(void)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult free_data(void *data)
{
    free(data);
    return CUDA_SUCCESS;
}

const void *const vgpu_remote_compile_cache_table[7] = {
    (const void *)(7 * sizeof(void *)),
    (const void *)make_key,
    (const void *)free_key,
    (const void *)lookup,
    (const void *)store,
    (const void *)not_used,
    (const void *)free_data,
};
