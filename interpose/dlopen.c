/*
 * What vgpu's dlopen and dlmopen (dlopen_thunk.S, dlmopen_thunk.S) open
 * instead of a real driver: dlopen("libcuda.so"), dlopen("libnvidia-ml.so"),
 * an absolute path to a real copy, or any of these into another link-map
 * namespace would reach the driver behind vgpu's back.
 *
 * - In the base namespace a driver name becomes the SONAME when a vgpu
 *   library holds it (the loader then answers vgpu), or this library's own
 *   file when this library is vgpu's stand-in for that SONAME but the real
 *   driver was loaded under it first.
 * - Into any other namespace it becomes the file of vgpu's library for that
 *   SONAME: the vgpu copy there joins the same vGPU and counts into the same
 *   BAR0 (vgpu_backend/join/self.c joins once per copy).
 *
 * Objects loaded with RTLD_DEEPBIND, or into another namespace, bind their
 * own dlopen to the C library's, not to vgpu's, so vgpu makes those loads
 * itself and then rebinds what they loaded (interpose/open_for_caller.c).
 */
#define _GNU_SOURCE
#include "common/identity.h"
#include "common/log.h"
#include "forwarder/pathfinder.h"
#include "interpose/open_for_caller.h"
#include "interpose/rebind.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a thunk does next: tail-jump to the real function with value as the
 * file (done == 0), or return value, a handle (done == 1).  Two integer
 * words: returned in %rax and %rdx. */
struct vgpu_dlopen_step {
    void *value;
    long done;
};

/* Where the thunks jump; set before every jump by the prepare functions. */
__attribute__((visibility("hidden"))) vgpu_dlopen_fn vgpu_dlopen_next;
__attribute__((visibility("hidden"))) vgpu_dlmopen_fn vgpu_dlmopen_next;

static const struct {
    const char *prefix, *soname;
} redirects[] = {
    { "libcuda.so", "libcuda.so.1" },
    { "libnvidia-ml.so", "libnvidia-ml.so.1" },
};

/* This library's SONAME and real path, read once from its own link map. */
static const char *own_soname, *own_path;
static pthread_once_t own_once = PTHREAD_ONCE_INIT;

static void find_own(void)
{
    static char path[PATH_MAX];
    Dl_info di;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)find_own, &di, (void **)&lm, RTLD_DL_LINKMAP) || !lm || !realpath(di.dli_fname, path))
        return;
    own_path = path;
    const ElfW(Dyn) *d = lm->l_ld;
    const char *strtab = NULL;
    ElfW(Addr) soname = 0;
    int has_soname = 0;
    for (; d && d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_STRTAB)
            strtab = (const char *)vgpu_dynamic_address(lm->l_addr, d->d_un.d_ptr);
        else if (d->d_tag == DT_SONAME) {
            soname = d->d_un.d_val;
            has_soname = 1;
        }
    }
    if (strtab && has_soname)
        own_soname = strtab + soname;
}

/* The vgpu library for soname: its file if another namespace is to load it
 * (buf), the SONAME itself where a vgpu library holds it in the base
 * namespace, this library's file where the real driver holds it; NULL
 * where vgpu has none. */
static const char *vgpu_for(const char *soname, int base, char *buf, size_t len)
{
    pthread_once(&own_once, find_own);
    int mine = own_soname && strcmp(own_soname, soname) == 0;
    void *h = vgpu_real_dlmopen()(LM_ID_BASE, soname, RTLD_LAZY | RTLD_NOLOAD);
    struct link_map *lm = NULL;
    const char *found = NULL;
    if (h && vgpu_handle_is_vgpu(h)) {
        if (base)
            found = soname;
        else if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && realpath(lm->l_name, buf))
            found = buf;
    }
    if (h)
        dlclose(h); /* only drops the reference this lookup took */
    if (!found && mine && own_path) {
        snprintf(buf, len, "%s", own_path);
        found = buf;
    }
    return found;
}

/* What to open for file, in the base namespace or another. */
static const char *redirect(const char *file, int base)
{
    static __thread char target[PATH_MAX]; /* lives until the thunk's jump */
    if (!file)
        return file;
    const char *name = strrchr(file, '/');
    name = name ? name + 1 : file;
    for (size_t i = 0; i < sizeof(redirects) / sizeof(*redirects); i++) {
        if (strncmp(name, redirects[i].prefix, strlen(redirects[i].prefix)) != 0)
            continue;
        const char *to = vgpu_for(redirects[i].soname, base, target, sizeof(target));
        if (!to || strcmp(to, file) == 0)
            return file;
        vgpu_debug("%s \"%s\" redirected to vgpu's %s", base ? "an open of" : "a load into another namespace of",
                   file, to);
        return to;
    }
    return file;
}

static Lmid_t namespace_of(const void *caller)
{
    Dl_info di;
    struct link_map *lm = NULL;
    Lmid_t ns = LM_ID_BASE;
    if (dladdr1(caller, &di, (void **)&lm, RTLD_DL_LINKMAP) && lm && dlinfo(lm, RTLD_DI_LMID, &ns) != 0)
        ns = LM_ID_BASE;
    return ns;
}

__attribute__((visibility("hidden"))) struct vgpu_dlopen_step vgpu_dlopen_prepare(const char *file, int mode,
                                                                                  const void *caller);
struct vgpu_dlopen_step vgpu_dlopen_prepare(const char *file, int mode, const void *caller)
{
    vgpu_dlopen_next = vgpu_real_dlopen();
    Lmid_t ns = namespace_of(caller);
    const char *target = redirect(file, ns == LM_ID_BASE);
    /* (dlmopen, through which vgpu loads into another namespace, refuses RTLD_GLOBAL there.) */
    if ((mode & RTLD_DEEPBIND) && (ns == LM_ID_BASE || !(mode & RTLD_GLOBAL)))
        return (struct vgpu_dlopen_step){ vgpu_open_for_caller(ns, target, mode, caller), 1 };
    return (struct vgpu_dlopen_step){ (void *)target, 0 };
}

__attribute__((visibility("hidden"))) struct vgpu_dlopen_step vgpu_dlmopen_prepare(Lmid_t lmid, const char *file,
                                                                                   int mode, const void *caller);
struct vgpu_dlopen_step vgpu_dlmopen_prepare(Lmid_t lmid, const char *file, int mode, const void *caller)
{
    vgpu_dlmopen_next = vgpu_real_dlmopen();
    /* A look, not a load: how tools and tests find the driver behind vgpu. */
    if (lmid == LM_ID_BASE && (mode & RTLD_NOLOAD))
        return (struct vgpu_dlopen_step){ (void *)file, 0 };
    const char *target = redirect(file, lmid == LM_ID_BASE);
    if (lmid != LM_ID_BASE || (mode & RTLD_DEEPBIND))
        return (struct vgpu_dlopen_step){ vgpu_open_for_caller(lmid, target, mode, caller), 1 };
    return (struct vgpu_dlopen_step){ (void *)target, 0 };
}
