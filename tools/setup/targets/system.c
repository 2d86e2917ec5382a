/* See system.h. */
#define _GNU_SOURCE
#include "tools/setup/targets/system.h"

#include "common/error.h"
#include "tools/setup/command.h"
#include "tools/setup/record/record.h"
#include "tools/setup/targets/ldcache.h"

#include <stdio.h>
#include <string.h>

#define RECORD_ID "system"

static int run_ldconfig(const struct setup_ctx *c, char *err, size_t errlen)
{
    /* Under --root, ldconfig reads and writes that system's files. */
    const char *argv[] = { c->ldconfig, c->root[0] ? "-r" : NULL, c->root, NULL };
    return setup_run(argv, err, errlen);
}

bool setup_system_report(const struct setup_ctx *c, void (*say)(const char *fmt, ...))
{
    static const struct { const char *soname; const struct vgpu_driver_spec *spec; } libs[] = {
        { "libcuda.so.1", &vgpu_cuda_spec },
        { "libnvidia-ml.so.1", &vgpu_nvml_spec },
    };
    bool all_vgpu = true;
    for (size_t i = 0; i < sizeof(libs) / sizeof(*libs); i++) {
        char path[PATH_MAX], why[512];
        int found = setup_cache_resolve(c, libs[i].soname, path, sizeof(path));
        if (found < 0) {
            say("ld.so.cache: %s%s is missing (run ldconfig)", c->root, "/etc/ld.so.cache");
            return false;
        }
        if (found == 0) {
            say("ld.so.cache: %s is not in it", libs[i].soname);
            all_vgpu = false;
            continue;
        }
        enum setup_lib_kind kind = setup_lib_kind(c, path, libs[i].spec, why, sizeof(why));
        say("ld.so.cache: %s -> %s (%s%s)", libs[i].soname, path,
            kind == SETUP_LIB_VGPU ? "vgpu" : kind == SETUP_LIB_DRIVER ? "the driver" : "neither vgpu nor the driver: ",
            kind == SETUP_LIB_OTHER ? why : "");
        all_vgpu = all_vgpu && kind == SETUP_LIB_VGPU;
    }
    return all_vgpu;
}

int setup_enable_system(const struct setup_ctx *c, char *err, size_t errlen)
{
    if (setup_check_libs(c, true, err, errlen) != 0)
        return -1;
    char text[PATH_MAX + 512], real[PATH_MAX];
    snprintf(text, sizeof(text),
             "# Written by vgpu-setup: `vgpu-setup disable --system` puts back what was here before.\n"
             "# vgpu's libcuda.so.1 and libnvidia-ml.so.1, ahead of the driver's: 000- sorts this\n"
             "# file first, and the loader takes the first directory that has a library.\n"
             "%s\n", c->linkdir);
    setup_path(c, SETUP_LDSO_ENTRY, real, sizeof(real));
    int done = setup_install(c, RECORD_ID, SETUP_LDSO_ENTRY, text, strlen(text), err, errlen);
    if (done < 0)
        return -1;
    if (done == SETUP_UNCHANGED)
        setup_say("system: already enabled, %s unchanged", real);
    else
        setup_say("system: %s %s, naming %s", done == SETUP_INSTALLED ? "wrote" : "updated", real, c->linkdir);
    if (run_ldconfig(c, err, errlen) != 0)
        return -1;
    if (!setup_system_report(c, setup_say))
        setup_warn("the loader's cache does not resolve both libraries to vgpu: a file in %s/etc/ld.so.conf.d that "
                   "sorts before 000-vgpu.conf, or %s/etc/ld.so.conf itself, may name the driver's directory "
                   "first, or /etc/ld.so.conf does not include /etc/ld.so.conf.d/*.conf", c->root, c->root);
    setup_say("programs started from now on load vgpu for libcuda.so.1; restart running services to apply it");
    return 0;
}

int setup_disable_system(const struct setup_ctx *c, char *err, size_t errlen)
{
    char real[PATH_MAX];
    setup_path(c, SETUP_LDSO_ENTRY, real, sizeof(real));
    enum setup_before was;
    int done = setup_restore(c, RECORD_ID, &was, err, errlen);
    if (done < 0)
        return -1;
    if (done == 0) {
        setup_say_not_enabled(c, "system", real, "run ldconfig");
        return 0;
    }
    setup_say("system: %s: %s", real, setup_restored_what(was));
    if (run_ldconfig(c, err, errlen) != 0)
        return -1;
    setup_system_report(c, setup_say);
    return 0;
}
