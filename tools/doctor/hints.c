/* The fix commands several checks give; see checks.h. */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"
#include "vgpu_install_dirs.h"

#include <stdio.h>
#include <sys/stat.h>

const char *doc_rerun_hint(const struct doc_ctx *c, char *buf, size_t len)
{
    if (c->service)
        snprintf(buf, len, "sudo vgpu-setup enable --service %s && sudo systemctl restart %s", c->service,
                 c->service);
    else if (c->proc)
        snprintf(buf, len, "restart it under vgpu: vgpu-run -- %s", c->proc->command);
    else
        snprintf(buf, len, "run it under vgpu: vgpu-run -- COMMAND");
    return buf;
}

/* vgpu's symlink directory: beside the libraries found (an install), else the configured libdir's. */
static void symlink_dir(const struct doc_ctx *c, char *dir, size_t len)
{
    struct stat st;
    snprintf(dir, len, "%s/vgpu", c->libs.dir);
    if (!c->libs.dir[0] || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        snprintf(dir, len, "%s/vgpu", VGPU_LIBDIR);
}

const char *doc_system_install_hint(const struct doc_ctx *c, char *buf, size_t len)
{
    char dir[PATH_MAX + 8];
    symlink_dir(c, dir, sizeof(dir));
    snprintf(buf, len, "install vgpu in place of libcuda.so.1 and libnvidia-ml.so.1, which needs no LD_PRELOAD: "
             "sudo vgpu-setup enable --system (or by hand: echo %s | sudo tee /etc/ld.so.conf.d/000-vgpu.conf && "
             "sudo ldconfig)", dir);
    return buf;
}
