/* See dropin.h. */
#define _GNU_SOURCE
#include "tools/setup/targets/dropin.h"

#include "common/error.h"
#include "tools/setup/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool setup_is_ollama(const struct setup_unit *u)
{
    return u->ollama || strncmp(u->name, "ollama", 6) == 0;
}

/* Environment="NAME=VALUE", quoted for systemd: in double quotes a backslash
 * escapes, and % starts a specifier everywhere. */
static void env_line(struct setup_text *t, const char *name, const char *value)
{
    setup_text_add(t, "Environment=\"%s=", name);
    for (const char *p = value; *p; p++) {
        if (*p == '"' || *p == '\\')
            setup_text_add(t, "\\%c", *p);
        else if (*p == '%')
            setup_text_add(t, "%%%%");
        else
            setup_text_add(t, "%c", *p);
    }
    setup_text_add(t, "\"\n");
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* vgpu's two libraries, then the unit's own entries less any copy of vgpu:
 * a second copy loaded beside the first would fight it for every symbol. */
static void preload_value(struct setup_text *t, const struct setup_ctx *c, const struct setup_unit *u)
{
    setup_text_add(t, "%s/%s %s/%s", c->libdir, SETUP_CUDA_LIB, c->libdir, SETUP_NVML_LIB);
    char old[sizeof(u->preload)], *rest = old, *entry;
    snprintf(old, sizeof(old), "%s", u->has_preload ? u->preload : "");
    while ((entry = strsep(&rest, " :"))) /* the loader's separators */
        if (*entry && strcmp(base_name(entry), SETUP_CUDA_LIB) != 0 && strcmp(base_name(entry), SETUP_NVML_LIB) != 0)
            setup_text_add(t, " %s", entry);
}

/* The symlink directory, then the unit's own entries less that directory
 * and less empty entries (an empty one is the current directory). */
static void libpath_value(struct setup_text *t, const struct setup_ctx *c, const struct setup_unit *u)
{
    setup_text_add(t, "%s", c->linkdir);
    char old[sizeof(u->libpath)], *rest = old, *entry;
    snprintf(old, sizeof(old), "%s", u->has_libpath ? u->libpath : "");
    while ((entry = strsep(&rest, ":")))
        if (*entry && strcmp(entry, c->linkdir) != 0)
            setup_text_add(t, ":%s", entry);
}

char *setup_dropin_text(const struct setup_ctx *c, const struct setup_unit *u, const struct setup_service_opts *o,
                        char *err, size_t errlen)
{
    struct setup_text t = { 0 };
    setup_text_add(&t, "# Written by vgpu-setup: `vgpu-setup disable --service %s` puts back what\n"
            "# was here before.  Runs the service's CUDA programs in a vGPU (docs/guide/install.md).\n", u->name);
    setup_text_add(&t, "[Unit]\n"
            "# With vgpu-mediatord on this host, start once it admits processes (its\n"
            "# unit is Type=notify); without it, this ordering does nothing.\n"
            "After=vgpu-mediatord.service\n");
    if (o->mediator)
        setup_text_add(&t, "# The vGPU comes from the mediator: start it with this service.\n"
                "Wants=vgpu-mediatord.service\n");
    setup_text_add(&t, "\n[Service]\n");
    struct setup_text value = { 0 };
    if (o->symlink) {
        setup_text_add(&t, "# vgpu's libcuda.so.1 and libnvidia-ml.so.1 first on the library path, ahead of\n"
                "# the unit's own entries (this assignment replaces the unit's).\n");
        libpath_value(&value, c, u);
        env_line(&t, "LD_LIBRARY_PATH", value.failed ? "" : value.s);
    } else {
        setup_text_add(&t, "# vgpu's libraries ahead of the unit's own preloads (this assignment replaces the unit's).\n");
        preload_value(&value, c, u);
        env_line(&t, "LD_PRELOAD", value.failed ? "" : value.s);
    }
    t.failed = t.failed || value.failed;
    free(setup_text_take(&value));
    if (o->mediator) {
        setup_text_add(&t, "# Named, so the service is refused, not run without its limits, if the mediator is away.\n");
        env_line(&t, "VGPU_MEDIATOR_SOCKET", o->socket);
    }
    if (o->vgpu)
        env_line(&t, "VGPU_NAME", o->vgpu);
    if (o->devices)
        env_line(&t, "VGPU_VISIBLE_DEVICES", o->devices);
    if (o->memory)
        env_line(&t, "VGPU_MEMORY_LIMIT", o->memory);
    if (o->compute)
        env_line(&t, "VGPU_COMPUTE_SHARE", o->compute);
    if (o->compute_mode)
        env_line(&t, "VGPU_COMPUTE_MODE", o->compute_mode);
    if (o->bar0)
        env_line(&t, "VGPU_BAR0", o->bar0);
    if (o->log)
        env_line(&t, "VGPU_LOG", o->log);
    if (setup_is_ollama(u)) {
        setup_text_add(&t, "# Ollama's Vulkan backend reaches the GPU without libcuda, so the vGPU's\n"
                "# limits would not apply to it.\n");
        env_line(&t, "OLLAMA_VULKAN", "0");
    }
    char *text = setup_text_take(&t);
    if (!text)
        vgpu_fail(err, errlen, "out of memory");
    return text;
}
