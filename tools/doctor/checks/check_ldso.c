/*
 * What libcuda.so.1 and libnvidia-ml.so.1 resolve to for a program that
 * links them: through the process's LD_LIBRARY_PATH, the ld.so
 * configuration and its cache, and the default directories.  Finds links
 * that dangle, links to the driver in a directory meant for vgpu, vgpu's
 * directory configured after the driver's, and a cache older than the
 * configuration.
 */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"

#include "forwarder/ldso.h"
#include "tools/doctor/ldconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LD_SO_CACHE "/etc/ld.so.cache"
#define MAX_DIRS 128

/* Debian's and glibc's default directories, searched after the cache. */
static const char *const default_dirs[] = {
    "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
};

enum origin { FROM_ENV, FROM_CONF, FROM_DEFAULT };

struct dir {
    char path[PATH_MAX];
    char file[PATH_MAX]; /* FROM_CONF: the file that lists it */
    enum origin origin;
};

struct dirs {
    const struct doc_fs *fs;
    struct dir d[MAX_DIRS];
    int n;
};

static void add_dir(struct dirs *ds, const char *path, const char *file, enum origin origin)
{
    char canon[PATH_MAX];
    /* Once each, where it first comes; a directory that does not exist holds nothing. */
    if (!path[0] || ds->n == MAX_DIRS || doc_fs_resolve(ds->fs, path, canon, sizeof(canon)) != 0)
        return;
    for (int i = 0; i < ds->n; i++) {
        char other[PATH_MAX];
        if (doc_fs_resolve(ds->fs, ds->d[i].path, other, sizeof(other)) == 0 && strcmp(other, canon) == 0)
            return;
    }
    struct dir *d = &ds->d[ds->n++];
    snprintf(d->path, sizeof(d->path), "%s", path);
    snprintf(d->file, sizeof(d->file), "%s", file ? file : "");
    d->origin = origin;
}

static int add_conf_dir(const char *dir, const char *file, void *ctx)
{
    add_dir(ctx, dir, file, FROM_CONF);
    return 0;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* A directory meant for vgpu: vgpu's symlink directory, or one whose other library is vgpu.  (Not one
 * that merely holds libvgpu-*.so: vgpu may be installed into the driver's own directory.) */
static bool meant_for_vgpu(const struct doc_fs *fs, const char *dir, enum doc_which w)
{
    char path[PATH_MAX * 2];
    if (strcmp(base_name(dir), "vgpu") == 0)
        return true;
    enum doc_which other = w == DOC_CUDA ? DOC_NVML : DOC_CUDA;
    snprintf(path, sizeof(path), "%s/%s", dir, doc_libs[other].soname);
    return doc_fs_exists(fs, path) && doc_classify(fs, path, other) == DOC_LIB_VGPU;
}

/* Where vgpu's library is, as a link target from dir: "../libvgpu-cuda.so" in an install. */
static void vgpu_target(const struct doc_ctx *c, const char *dir, enum doc_which w, char *out, size_t len)
{
    char parent[PATH_MAX], path[PATH_MAX * 2];
    snprintf(parent, sizeof(parent), "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash)
        *slash = '\0';
    snprintf(path, sizeof(path), "%s/%s", parent, doc_libs[w].vgpu);
    if (doc_fs_exists(&c->fs, path)) {
        snprintf(out, len, "../%s", doc_libs[w].vgpu);
        return;
    }
    snprintf(out, len, "%s/%s", c->libs.dir, doc_libs[w].vgpu);
}

/* One directory's copy of library w: dangling links and the driver where vgpu was meant.
 * Returns its kind. */
static enum doc_lib_kind check_one(struct doc_ctx *c, const struct dir *d, enum doc_which w)
{
    char path[PATH_MAX * 2], canon[PATH_MAX], target[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", d->path, doc_libs[w].soname);
    if (!doc_fs_exists(&c->fs, path))
        return DOC_LIB_MISSING;
    if (doc_fs_resolve(&c->fs, path, canon, sizeof(canon)) != 0) {
        char full[PATH_MAX * 2];
        ssize_t n = readlink(doc_fs_path(&c->fs, path, full, sizeof(full)), target, sizeof(target) - 1);
        target[n > 0 ? n : 0] = '\0';
        bool vgpus = strstr(target, "libvgpu-") != NULL;
        struct doc_finding *f = doc_add(&c->report, DOC_PROBLEM, "ld.so",
                                        "%s is a stale link to %s, which does not exist (%s): the loader skips it",
                                        path, target[0] ? target : "?", canon);
        if (vgpus)
            doc_fix(f, "reinstall vgpu so that %s exists (sudo meson install -C build), or remove the link: sudo rm "
                    "%s && sudo ldconfig", target, path);
        else
            doc_fix(f, "remove the link (sudo rm %s && sudo ldconfig), or reinstall what it belonged to (dpkg -S %s)",
                    path, path);
        return DOC_LIB_MISSING;
    }
    enum doc_lib_kind kind = doc_classify(&c->fs, path, w);
    if (kind == DOC_LIB_DRIVER && meant_for_vgpu(&c->fs, d->path, w)) {
        char want[PATH_MAX + 32];
        vgpu_target(c, d->path, w, want, sizeof(want));
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "ld.so",
                        "%s points at the driver (%s) in a directory meant for vgpu: programs that find %s there "
                        "load the driver and run without vGPU limits", path, canon, doc_libs[w].soname),
                "point it at vgpu: sudo ln -sfn %s %s%s", want, path, d->origin == FROM_CONF ? " && sudo ldconfig" : "");
    } else if (kind == DOC_LIB_STUB && d->origin != FROM_DEFAULT) {
        doc_fix(doc_add(&c->report, DOC_WARNING, "ld.so",
                        "%s is the CUDA toolkit's link-time stub, on the %s: a program that loads it gets "
                        "CUDA_ERROR_STUB_LIBRARY from every call", path,
                        d->origin == FROM_ENV ? "process's LD_LIBRARY_PATH" : "loader's search path"),
                "take %s out of %s", d->path, d->origin == FROM_ENV ? "LD_LIBRARY_PATH" : d->file);
    } else if (d->origin == FROM_ENV && (kind == DOC_LIB_VGPU || kind == DOC_LIB_DRIVER)) {
        doc_add(&c->report, DOC_INFO, "ld.so", "LD_LIBRARY_PATH: %s is %s", path, doc_kind_word(kind));
    }
    return kind;
}

/* vgpu's directory configured after the driver's: ldconfig ranks the driver first. */
static void check_order(struct doc_ctx *c, enum doc_which w, const struct dir *vgpu, const struct dir *driver)
{
    if (!vgpu || !driver || vgpu < driver)
        return;
    struct doc_finding *f = doc_add(&c->report, DOC_PROBLEM, "ld.so",
                                    "vgpu's directory %s (listed in %s) comes after the driver's %s (listed in %s) "
                                    "in the ld.so configuration, so ldconfig ranks the driver's %s first and "
                                    "programs load the driver", vgpu->path, vgpu->file, driver->path, driver->file,
                                    doc_libs[w].soname);
    if (strcmp(vgpu->file, driver->file) == 0)
        doc_fix(f, "list %s before %s in %s, then: sudo ldconfig", vgpu->path, driver->path, vgpu->file);
    else
        doc_fix(f, "sudo vgpu-setup enable --system (its /etc/ld.so.conf.d/000-vgpu.conf is read before %s); or "
                "rename the entry so that it sorts first: sudo mv %s /etc/ld.so.conf.d/000-vgpu.conf && sudo ldconfig",
                driver->file, vgpu->file);
}

struct first {
    char path[PATH_MAX];
    const char *soname;
};

static int first_cached(const char *path, void *ctx)
{
    struct first *f = ctx;
    if (strcmp(base_name(path), f->soname) != 0)
        return 0;
    snprintf(f->path, sizeof(f->path), "%s", path);
    return 1;
}

/* What the cache answers for library w, against what the configuration asks for. */
static void check_cache(struct doc_ctx *c, enum doc_which w, bool vgpu_first)
{
    char cache[PATH_MAX * 2];
    struct first first = { "", doc_libs[w].soname };
    doc_fs_path(&c->fs, LD_SO_CACHE, cache, sizeof(cache));
    if (access(cache, R_OK) != 0)
        return;
    vgpu_ldso_cache_paths(cache, doc_libs[w].soname, first_cached, &first);
    if (!first.path[0]) {
        if (vgpu_first)
            doc_fix(doc_add(&c->report, DOC_PROBLEM, "ld.so", "the ld.so cache has no %s, though the configuration "
                            "lists vgpu's directory: it is older than the configuration", doc_libs[w].soname),
                    "sudo ldconfig");
        return;
    }
    enum doc_lib_kind kind = doc_classify(&c->fs, first.path, w);
    if (kind == DOC_LIB_MISSING)
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "ld.so", "the ld.so cache resolves %s to %s, which no longer "
                        "exists: programs that link it fail to start", doc_libs[w].soname, first.path),
                "sudo ldconfig");
    else if (vgpu_first && kind != DOC_LIB_VGPU)
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "ld.so", "the ld.so cache resolves %s to %s (%s), though the "
                        "configuration puts vgpu's directory first: the cache is older than the configuration",
                        doc_libs[w].soname, first.path, doc_kind_word(kind)),
                "sudo ldconfig");
    else
        doc_add(&c->report, kind == DOC_LIB_VGPU ? DOC_OK : DOC_INFO, "ld.so",
                "the ld.so cache resolves %s to %s (%s)", doc_libs[w].soname, first.path, doc_kind_word(kind));
}

void doc_check_ldso(struct doc_ctx *c)
{
    struct dirs *ds = calloc(1, sizeof(*ds));
    if (!ds)
        return;
    ds->fs = &c->fs;
    const char *env = c->proc ? doc_proc_getenv(c->proc, "LD_LIBRARY_PATH") : NULL;
    char *copy = strdup(env ? env : ""), *rest = copy, *dir;
    while (copy && (dir = strsep(&rest, ":;")))
        add_dir(ds, dir, NULL, FROM_ENV);
    free(copy);
    int conf_start = ds->n;
    doc_conf_dirs(&c->fs, add_conf_dir, ds);
    int conf_end = ds->n;
    for (size_t i = 0; i < sizeof(default_dirs) / sizeof(*default_dirs); i++)
        add_dir(ds, default_dirs[i], NULL, FROM_DEFAULT);

    for (int w = 0; w < DOC_NLIBS; w++) {
        const struct dir *vgpu = NULL, *driver = NULL;
        for (int i = 0; i < ds->n; i++) {
            enum doc_lib_kind kind = check_one(c, &ds->d[i], (enum doc_which)w);
            if (i < conf_start || i >= conf_end)
                continue;
            if (kind == DOC_LIB_VGPU && !vgpu)
                vgpu = &ds->d[i];
            if (kind == DOC_LIB_DRIVER && !driver)
                driver = &ds->d[i];
        }
        check_order(c, (enum doc_which)w, vgpu, driver);
        check_cache(c, (enum doc_which)w, vgpu && (!driver || vgpu < driver));
    }
    free(ds);
}
