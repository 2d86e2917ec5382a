/*
 * The systemd drop-in that puts a service under vgpu: the knowledge of
 * tools/systemd/vgpu-preload.conf.in (the ordering after vgpu-mediatord,
 * LD_PRELOAD or the symlink directory), filled in for one service.
 */
#pragma once

#include "tools/setup/setup.h"
#include "tools/setup/targets/unit.h"

#include <stdbool.h>
#include <stddef.h>

struct setup_service_opts {
    bool symlink;         /* LD_LIBRARY_PATH with the symlink directory, not LD_PRELOAD */
    bool mediator;        /* the vGPU comes from vgpu-mediatord */
    const char *socket;   /* with mediator: its socket */
    const char *vgpu;     /* VGPU_NAME, or NULL */
    const char *memory;   /* standalone: VGPU_MEMORY_LIMIT, VGPU_VISIBLE_DEVICES, VGPU_BAR0, or NULL */
    const char *compute;  /* standalone: VGPU_COMPUTE_SHARE and VGPU_COMPUTE_MODE, or NULL */
    const char *compute_mode;
    const char *devices;
    const char *bar0;
    const char *log;      /* VGPU_LOG, or NULL */
};

/* Ollama's Vulkan backend reaches the GPU without libcuda: such a service
 * gets OLLAMA_VULKAN=0.  By its name, or by what its ExecStart= runs. */
bool setup_is_ollama(const struct setup_unit *u);

/* The drop-in for u (malloc'd), or NULL with err. */
char *setup_dropin_text(const struct setup_ctx *c, const struct setup_unit *u, const struct setup_service_opts *o,
                        char *err, size_t errlen);
