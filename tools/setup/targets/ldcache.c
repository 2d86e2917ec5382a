/* See ldcache.h. */
#define _GNU_SOURCE
#include "tools/setup/targets/ldcache.h"

#include "forwarder/elfcheck.h"
#include "forwarder/ldso.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct lookup {
    const char *soname;
    char *path;
    size_t len;
};

static int first_match(const char *path, void *ctx)
{
    struct lookup *l = ctx;
    const char *slash = strrchr(path, '/');
    if (strcmp(slash ? slash + 1 : path, l->soname) != 0)
        return 0;
    snprintf(l->path, l->len, "%s", path);
    return 1;
}

int setup_cache_resolve(const struct setup_ctx *c, const char *soname, char *path, size_t len)
{
    char cache[PATH_MAX];
    struct stat st;
    if (setup_path(c, "/etc/ld.so.cache", cache, sizeof(cache)) != 0 || stat(cache, &st) != 0)
        return -1;
    struct lookup l = { soname, path, len };
    return vgpu_ldso_cache_paths(cache, soname, first_match, &l) ? 1 : 0;
}

/* path's real path with links followed as the target system would: an
 * absolute link target is inside --root. */
static void resolve_in_root(const struct setup_ctx *c, const char *path, char *out, size_t len)
{
    char cur[PATH_MAX];
    snprintf(cur, sizeof(cur), "%s", path);
    for (int hops = 0; hops < 40; hops++) {
        char real[PATH_MAX], link[PATH_MAX];
        if (setup_path(c, cur, real, sizeof(real)) != 0)
            break;
        ssize_t n = readlink(real, link, sizeof(link) - 1);
        if (n <= 0)
            break;
        link[n] = '\0';
        if (link[0] == '/') {
            snprintf(cur, sizeof(cur), "%s", link);
        } else {
            char dir[PATH_MAX];
            snprintf(dir, sizeof(dir), "%s", cur);
            char next[2 * PATH_MAX];
            snprintf(next, sizeof(next), "%s/%s", dirname(dir), link);
            if ((size_t)snprintf(cur, sizeof(cur), "%s", next) >= sizeof(cur))
                break;
        }
    }
    if (setup_path(c, cur, out, len) != 0)
        snprintf(out, len, "%s", path);
}

enum setup_lib_kind setup_lib_kind(const struct setup_ctx *c, const char *path, const struct vgpu_driver_spec *spec,
                                   char *why, size_t whylen)
{
    char real[PATH_MAX];
    resolve_in_root(c, path, real, sizeof(real));
    why[0] = '\0';
    if (vgpu_elf_is_vgpu(real))
        return SETUP_LIB_VGPU;
    const char *reason = vgpu_elf_check(real, spec);
    if (!reason)
        return SETUP_LIB_DRIVER;
    snprintf(why, whylen, "%s", reason);
    return SETUP_LIB_OTHER;
}
