/*
 * Catching the opens that would reach the real driver behind vgpu's back:
 * dlopen("libcuda.so"), dlopen("libnvidia-ml.so"), or an absolute path to a
 * real copy.  When a vgpu library is loaded under the matching SONAME, the
 * request is turned into that SONAME, which the loader answers with vgpu.
 */
#define _GNU_SOURCE
#include "common/identity.h"
#include "common/log.h"
#include "forwarder/pathfinder.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

/* Where the thunk jumps; set before every jump by vgpu_dlopen_redirect. */
__attribute__((visibility("hidden"))) vgpu_dlopen_fn vgpu_dlopen_next;

static const struct {
    const char *prefix, *soname;
} redirects[] = {
    { "libcuda.so", "libcuda.so.1" },
    { "libnvidia-ml.so", "libnvidia-ml.so.1" },
};

static int soname_is_vgpu(const char *soname)
{
    void *h = vgpu_dlopen_next(soname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    int vgpu = vgpu_handle_is_vgpu(h);
    dlclose(h);
    return vgpu;
}

__attribute__((visibility("hidden"))) const char *vgpu_dlopen_redirect(const char *file);
const char *vgpu_dlopen_redirect(const char *file)
{
    vgpu_dlopen_next = vgpu_real_dlopen();
    if (!file)
        return file;
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    for (size_t i = 0; i < sizeof(redirects) / sizeof(*redirects); i++) {
        if (strncmp(base, redirects[i].prefix, strlen(redirects[i].prefix)) != 0 ||
            strcmp(file, redirects[i].soname) == 0 || !soname_is_vgpu(redirects[i].soname))
            continue;
        vgpu_debug("dlopen(\"%s\") redirected to vgpu's %s", file, redirects[i].soname);
        return redirects[i].soname;
    }
    return file;
}
