#define _GNU_SOURCE
#include "forwarder/ldso.h"

#include <ctype.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_INCLUDE_DEPTH 8

static char *trim(char *s)
{
    s[strcspn(s, "#\n")] = '\0';
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static int conf_walk(const char *conf, vgpu_path_fn fn, void *ctx, int depth)
{
    if (depth > MAX_INCLUDE_DEPTH)
        return 0;
    FILE *f = fopen(conf, "re");
    if (!f)
        return 0;
    char line[4096];
    int stop = 0;
    while (!stop && fgets(line, sizeof(line), f)) {
        char *s = trim(line);
        if (strncmp(s, "include", 7) == 0 && isspace((unsigned char)s[7])) {
            char *pattern = trim(s + 8), full[4096];
            if (pattern[0] != '/') {
                char dir[4096];
                snprintf(dir, sizeof(dir), "%s", conf);
                snprintf(full, sizeof(full), "%s/%s", dirname(dir), pattern);
            } else {
                snprintf(full, sizeof(full), "%s", pattern);
            }
            glob_t g;
            if (glob(full, 0, NULL, &g) == 0) {
                for (size_t i = 0; !stop && i < g.gl_pathc; i++)
                    stop = conf_walk(g.gl_pathv[i], fn, ctx, depth + 1);
                globfree(&g);
            }
        } else if (s[0] == '/') {
            /* "dir=TYPE" (libc5 hwcap syntax) still names a directory. */
            s[strcspn(s, "= \t")] = '\0';
            stop = fn(s, ctx);
        }
    }
    fclose(f);
    return stop;
}

int vgpu_ldso_conf_dirs(const char *conf, vgpu_path_fn fn, void *ctx)
{
    return conf_walk(conf, fn, ctx, 0);
}

/* glibc's ld.so.cache, "new" format (the only one written since 2.32, and
 * the second half of the older combined format). */
#define CACHE_MAGIC_NEW "glibc-ld.so.cache1.1"
struct cache_header {
    char magic[20];
    uint32_t nlibs;
    uint32_t len_strings;
    uint8_t flags;
    uint8_t pad[3];
    uint32_t extension_offset;
    uint32_t unused[3];
};
struct cache_entry {
    int32_t flags;
    uint32_t key, value;
    uint32_t osversion;
    uint64_t hwcap;
};

static const char *find_new_header(const char *map, size_t size)
{
    /* Old format first ("ld.so-1.7.0", 12-byte entries), then the new one,
     * 8-byte aligned. */
    if (size >= sizeof(CACHE_MAGIC_NEW) - 1 && memcmp(map, CACHE_MAGIC_NEW, sizeof(CACHE_MAGIC_NEW) - 1) == 0)
        return map;
    if (size < 16 || memcmp(map, "ld.so-1.7.0", 11) != 0)
        return NULL;
    uint32_t nold;
    memcpy(&nold, map + 12, sizeof(nold));
    size_t off = 16 + (size_t)nold * 12;
    off = (off + 7) & ~(size_t)7;
    if (off + sizeof(struct cache_header) > size ||
        memcmp(map + off, CACHE_MAGIC_NEW, sizeof(CACHE_MAGIC_NEW) - 1) != 0)
        return NULL;
    return map + off;
}

int vgpu_ldso_cache_paths(const char *cache, const char *prefix, vgpu_path_fn fn, void *ctx)
{
    int fd = open(cache, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(struct cache_header)) {
        close(fd);
        return 0;
    }
    size_t size = (size_t)st.st_size;
    const char *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return 0;
    int stop = 0;
    const char *hdr_p = find_new_header(map, size);
    if (hdr_p) {
        struct cache_header hdr;
        memcpy(&hdr, hdr_p, sizeof(hdr));
        size_t base = (size_t)(hdr_p - map);
        size_t entries = base + sizeof(hdr);
        if (hdr.nlibs <= (size - entries) / sizeof(struct cache_entry)) {
            size_t plen = strlen(prefix);
            for (uint32_t i = 0; !stop && i < hdr.nlibs; i++) {
                struct cache_entry e;
                memcpy(&e, map + entries + (size_t)i * sizeof(e), sizeof(e));
                /* String offsets count from the start of the new-format
                 * header; both must lie inside the file, NUL-terminated. */
                size_t k = base + e.key, v = base + e.value;
                if (k >= size || v >= size || !memchr(map + k, 0, size - k) || !memchr(map + v, 0, size - v))
                    continue;
                if (strncmp(map + k, prefix, plen) == 0)
                    stop = fn(map + v, ctx);
            }
        }
    }
    munmap((void *)map, size);
    return stop;
}
