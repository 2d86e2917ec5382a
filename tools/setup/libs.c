/* setup_check_libs (setup.h): vgpu-setup writes paths into a system's
 * configuration only where vgpu's libraries really are. */
#define _GNU_SOURCE
#include "tools/setup/setup.h"

#include "common/error.h"
#include "forwarder/elfcheck.h"

#include <stdio.h>
#include <string.h>

static int check(const struct setup_ctx *c, const char *dir, const char *name, char *err, size_t errlen)
{
    char target[PATH_MAX + 64], real[PATH_MAX + 64];
    snprintf(target, sizeof(target), "%s/%s", dir, name);
    if (setup_path(c, target, real, sizeof(real)) != 0)
        return vgpu_fail(err, errlen, "path too long: %s%s", c->root, target);
    if (!vgpu_elf_is_vgpu(real))
        return vgpu_fail(err, errlen, "%s is not vgpu's library (missing, or another file); install vgpu first "
                         "(sudo meson install -C build), or name the directory vgpu's libraries are in with "
                         "--libdir", real);
    return 0;
}

int setup_check_libs(const struct setup_ctx *c, bool links, char *err, size_t errlen)
{
    /* The loader splits LD_PRELOAD and LD_LIBRARY_PATH at both, with no way to quote them. */
    if (strpbrk(c->libdir, " :\t\n\"\\"))
        return vgpu_fail(err, errlen, "--libdir %s: a space, colon, quote or backslash in the path, which "
                         "LD_PRELOAD and LD_LIBRARY_PATH cannot hold", c->libdir);
    if (check(c, c->libdir, SETUP_CUDA_LIB, err, errlen) != 0 || check(c, c->libdir, SETUP_NVML_LIB, err, errlen) != 0)
        return -1;
    if (links && (check(c, c->linkdir, "libcuda.so.1", err, errlen) != 0 ||
                  check(c, c->linkdir, "libnvidia-ml.so.1", err, errlen) != 0))
        return -1;
    return 0;
}
