#define _GNU_SOURCE
#include "forwarder/pathfinder.h"

#include "common/identity.h"
#include "common/log.h"
#include "common/operator.h"
#include "forwarder/elfcheck.h"
#include "forwarder/ldso.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SEEN 64

struct search {
    const struct vgpu_driver_spec *spec;
    bool locked;          /* the operator's settings decide (common/operator.h) */
    struct vgpu_found *out;
    char *looked;
    size_t looked_len;
    char seen[MAX_SEEN][PATH_MAX];
    int nseen;
};

/* Stand in for a dlopen or dlmopen that cannot be found, so that no caller
 * ever jumps through NULL: every open fails (c_library logged why, once). */
static void *no_dlopen(const char *file, int mode)
{
    (void)file, (void)mode;
    return NULL;
}

static void *no_dlmopen(Lmid_t lmid, const char *file, int mode)
{
    (void)lmid, (void)file, (void)mode;
    return NULL;
}

/*
 * The C library's NAME, asked for by symbol version: every vgpu library
 * exports an unversioned dlopen and dlmopen (interpose/), and with both
 * preloaded a plain lookup from one finds the other, which would redirect
 * the forwarder's open of the real driver back to vgpu.  A versioned
 * lookup never matches an unversioned definition.
 *
 * The global scope first: it always holds the C library.  RTLD_NEXT sees
 * only the objects after vgpu in the load order, and vgpu loaded as a
 * dependency of a dependency (program -> libggml -> libcuda.so.1) comes
 * after the C library, so there it finds nothing.  RTLD_NEXT is the
 * fallback for a vgpu loaded with dlmopen into a namespace of its own,
 * whose global scope may not hold the C library yet.
 */
static void *c_library(const char *name, const char *const versions[2])
{
    void *const scopes[] = { RTLD_DEFAULT, RTLD_NEXT };
    void *fn = NULL;
    for (size_t i = 0; !fn && i < sizeof(scopes) / sizeof(*scopes); i++)
        for (size_t v = 0; !fn && v < 2; v++)
            fn = dlvsym(scopes[i], name, versions[v]);
    const char *preload = getenv("LD_PRELOAD");
    if (!fn)
        vgpu_error("the C library's %s (%s or %s) is in neither this process's global scope nor after vgpu in its "
                   "load order, so vgpu can open no library: the driver is not loaded and every %s through vgpu "
                   "fails. Something in the process hides it, such as a library ahead of vgpu that wraps dlvsym "
                   "(LD_PRELOAD=%s): remove it, or load vgpu first",
                   name, versions[0], versions[1], name, preload && *preload ? preload : "(unset)");
    return fn;
}

/* Found once, by find_loader_functions; read-only afterwards. */
static vgpu_dlopen_fn real_dlopen;
static vgpu_dlmopen_fn real_dlmopen;
static pthread_once_t loader_functions_once = PTHREAD_ONCE_INIT;

static void find_loader_functions(void)
{
    static const char *const dlopen_versions[2] = { "GLIBC_2.34", "GLIBC_2.2.5" };
    static const char *const dlmopen_versions[2] = { "GLIBC_2.34", "GLIBC_2.3.4" };
    real_dlopen = (vgpu_dlopen_fn)c_library("dlopen", dlopen_versions);
    real_dlmopen = (vgpu_dlmopen_fn)c_library("dlmopen", dlmopen_versions);
    if (!real_dlopen)
        real_dlopen = no_dlopen;
    if (!real_dlmopen)
        real_dlmopen = no_dlmopen;
}

vgpu_dlopen_fn vgpu_real_dlopen(void)
{
    pthread_once(&loader_functions_once, find_loader_functions);
    return real_dlopen;
}

vgpu_dlmopen_fn vgpu_real_dlmopen(void)
{
    pthread_once(&loader_functions_once, find_loader_functions);
    return real_dlmopen;
}

static void note(struct search *s, const char *fmt, ...)
{
    size_t used = strlen(s->looked);
    if (used + 1 >= s->looked_len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->looked + used, s->looked_len - used, fmt, ap);
    va_end(ap);
}

/* Returns 1 once the real library is open, else 0 (keep looking). */
static int try_file(const char *path, void *ctx)
{
    struct search *s = ctx;
    char real[PATH_MAX];
    if (access(path, F_OK) != 0 || !realpath(path, real))
        return 0;
    for (int i = 0; i < s->nseen; i++)
        if (strcmp(s->seen[i], real) == 0)
            return 0;
    if (s->nseen < MAX_SEEN)
        snprintf(s->seen[s->nseen++], PATH_MAX, "%s", real);

    const char *why = vgpu_elf_check(real, s->spec);
    struct stat st;
    /* On a machine the operator locked, a driver a user could write could
     * lie to vgpu about what it allocates. */
    if (!why && s->locked && (stat(real, &st) != 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))))
        why = "not root's, or writable by others, on a machine whose operator locked vgpu's settings";
    if (why) {
        note(s, "; refused %s (%s)", path, why);
        vgpu_debug("%s candidate %s refused: %s", s->spec->what, path, why);
        return 0;
    }
    void *h = vgpu_real_dlopen()(real, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror(); /* none where vgpu found no dlopen to call */
        note(s, "; could not load %s (%s)", path, err ? err : "no dlopen");
        return 0;
    }
    s->out->handle = h;
    snprintf(s->out->path, sizeof(s->out->path), "%s", real);
    return 1;
}

static int try_dir(const char *dir, void *ctx)
{
    struct search *s = ctx;
    char path[PATH_MAX];
    if (!dir[0])
        return 0;
    snprintf(path, sizeof(path), "%s/%s", dir, s->spec->soname);
    if (try_file(path, ctx))
        return 1;
    snprintf(path, sizeof(path), "%s/%s", dir, s->spec->file_prefix);
    return try_file(path, ctx);
}

static int try_dir_list(struct search *s, const char *list)
{
    char buf[8192];
    snprintf(buf, sizeof(buf), "%s", list);
    char *save = NULL;
    for (char *d = strtok_r(buf, ":;", &save); d; d = strtok_r(NULL, ":;", &save))
        if (try_dir(d, s))
            return 1;
    return 0;
}

struct loaded {
    char paths[8][PATH_MAX];
    int n;
    const char *prefix;
};

static int collect_loaded(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    struct loaded *l = ctx;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (!base || strncmp(base, l->prefix, strlen(l->prefix)) != 0 || vgpu_loaded_object_is_vgpu(info))
        return 0;
    if (l->n < 8)
        snprintf(l->paths[l->n++], PATH_MAX, "%s", info->dlpi_name);
    return 0;
}

/* The loader's own answer for the SONAME, unless that answer is vgpu. */
static int try_loader_search(struct search *s)
{
    void *h = vgpu_real_dlopen()(s->spec->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 0;
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
        dlclose(h);
        return 0;
    }
    if (vgpu_handle_is_vgpu(h)) {
        note(s, "; the loader's search finds vgpu itself");
        dlclose(h); /* only drops the reference this call took on vgpu */
        return 0;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s", lm->l_name);
    dlclose(h);
    return try_file(path, s);
}

static int try_toolkit(struct search *s, const char *var)
{
    const char *root = getenv(var);
    if (!root || !*root)
        return 0;
    static const char *const subdirs[] = { "compat", "lib64", "lib", "targets/x86_64-linux/lib" };
    char dir[PATH_MAX];
    for (size_t i = 0; i < sizeof(subdirs) / sizeof(*subdirs); i++) {
        snprintf(dir, sizeof(dir), "%s/%s", root, subdirs[i]);
        if (try_dir(dir, s))
            return 1;
    }
    return 0;
}

static const char *const default_dirs =
    "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64:/usr/lib64:/usr/lib/wsl/lib:"
    "/usr/local/nvidia/lib64:/usr/lib/nvidia";

static int search(struct search *s)
{
    const struct vgpu_driver_spec *spec = s->spec;
    const struct vgpu_operator *op = vgpu_operator();
    /* Under the operator's lock, the environment chooses no driver. */
    s->locked = vgpu_operator_locked(op);
    const char *forced = !s->locked ? getenv(spec->override_env)
                         : spec == &vgpu_cuda_spec ? op->real_libcuda
                                                   : op->real_nvml;
    if (forced && *forced) {
        note(s, "%s=%s", s->locked ? "the operator's setting" : spec->override_env, forced);
        if (try_file(forced, s))
            return 0;
        if (access(forced, F_OK) != 0)
            note(s, " (no such file)");
        return -1;
    }

    note(s, "looked in: the process's loaded libraries");
    struct loaded l = { .prefix = spec->file_prefix };
    dl_iterate_phdr(collect_loaded, &l);
    for (int i = 0; i < l.n; i++)
        if (try_file(l.paths[i], s))
            return 0;

    note(s, ", the loader's search for %s", spec->soname);
    if (try_loader_search(s))
        return 0;
    const char *ldpath = s->locked ? NULL : getenv("LD_LIBRARY_PATH");
    if (ldpath && *ldpath) {
        note(s, ", LD_LIBRARY_PATH");
        if (try_dir_list(s, ldpath))
            return 0;
    }
    note(s, ", /etc/ld.so.cache");
    if (vgpu_ldso_cache_paths("/etc/ld.so.cache", spec->file_prefix, try_file, s))
        return 0;

    if (!s->locked) {
        note(s, ", $CUDA_HOME, $CUDA_PATH");
        if (try_toolkit(s, "CUDA_HOME") || try_toolkit(s, "CUDA_PATH"))
            return 0;
    }

    note(s, ", /etc/ld.so.conf, %s", default_dirs);
    if (vgpu_ldso_conf_dirs("/etc/ld.so.conf", try_dir, s))
        return 0;
    if (try_dir_list(s, default_dirs))
        return 0;
    return -1;
}

int vgpu_pathfind(const struct vgpu_driver_spec *spec, struct vgpu_found *out, char *looked, size_t looked_len)
{
    /* On the heap: the seen-list is large for a thread stack, and happens once. */
    struct search *s = calloc(1, sizeof(*s));
    looked[0] = '\0';
    if (!s) {
        snprintf(looked, looked_len, "out of memory");
        return -1;
    }
    s->spec = spec;
    s->out = out;
    s->looked = looked;
    s->looked_len = looked_len;
    int rc = search(s);
    free(s);
    return rc;
}
