/*
 * The pathfinder reads the loader's configuration as ld.so does: directories
 * of ld.so.conf with nested include globs, and library paths from an
 * ld.so.cache built by the real ldconfig.  Usage: test_ldso TMPDIR
 */
#define _GNU_SOURCE
#include "forwarder/ldso.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct seen {
    char items[64][512];
    int n;
};

static int collect(const char *path, void *ctx)
{
    struct seen *s = ctx;
    if (s->n < 64)
        snprintf(s->items[s->n++], 512, "%s", path);
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

int main(int argc, char **argv)
{
    char path[600], conf[512], text[2048];
    int bad = 0;
    if (argc != 2)
        return 2;
    const char *t = argv[1];
    snprintf(path, sizeof(path), "%s/conf.d", t);
    mkdir(path, 0755);
    snprintf(conf, sizeof(conf), "%s/ld.so.conf", t);
    snprintf(text, sizeof(text), "# comment\n/first/dir  \ninclude conf.d/*.conf\n/last/dir=libc6 # hwcap form\n");
    write_file(conf, text);
    snprintf(path, sizeof(path), "%s/conf.d/10-a.conf", t);
    write_file(path, "/from/include/a\n");
    snprintf(path, sizeof(path), "%s/conf.d/20-b.conf", t);
    write_file(path, "  /from/include/b\n\n");

    struct seen s = { 0 };
    vgpu_ldso_conf_dirs(conf, collect, &s);
    const char *want[] = { "/first/dir", "/from/include/a", "/from/include/b", "/last/dir" };
    if (s.n != 4)
        bad++, printf("FAIL ld.so.conf gave %d directories, want 4\n", s.n);
    for (int i = 0; i < 4 && i < s.n; i++)
        if (strcmp(s.items[i], want[i]) != 0)
            bad++, printf("FAIL directory %d is '%s', want '%s'\n", i, s.items[i], want[i]);

    /* A cache built by ldconfig from a directory holding a libcuda.so.1. */
    if (access("/sbin/ldconfig", X_OK) != 0) {
        printf("SKIP no ldconfig\n");
        return bad ? 1 : 77;
    }
    const char *fake = getenv("TEST_FAKE_LIBCUDA");
    char dir[512], cache[512], cmd[2048];
    snprintf(dir, sizeof(dir), "%s/driver", t);
    mkdir(dir, 0755);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s/libcuda.so.1' && printf '%s\\n' > '%s/cache.conf' && "
             "/sbin/ldconfig -X -C '%s/ld.so.cache' -f '%s/cache.conf' 2>/dev/null",
             fake, dir, dir, t, t, t);
    if (system(cmd) != 0)
        bad++, printf("FAIL could not build a cache with ldconfig\n");
    snprintf(cache, sizeof(cache), "%s/ld.so.cache", t);
    struct seen c = { 0 };
    vgpu_ldso_cache_paths(cache, "libcuda.so", collect, &c);
    snprintf(path, sizeof(path), "%s/libcuda.so.1", dir);
    int found = 0;
    for (int i = 0; i < c.n; i++)
        found |= strcmp(c.items[i], path) == 0;
    if (!found)
        bad++, printf("FAIL %s not found in the ldconfig cache (%d libcuda entries)\n", path, c.n);
    struct seen none = { 0 };
    vgpu_ldso_cache_paths(cache, "libdoesnotexist.so", collect, &none);
    if (none.n != 0)
        bad++, printf("FAIL the cache lookup matched an absent library\n");
    if (!bad)
        printf("ok - ld.so.conf and ld.so.cache are read as the loader reads them\n");
    return bad ? 1 : 0;
}
