/*
 * `vgpu-setup cdi`: a Container Device Interface spec (kind vgpu.dev/vgpu)
 * with one device per vGPU, so that `docker run --device vgpu.dev/vgpu=NAME`
 * (or podman, or containerd) gives a container that vGPU: vgpu's libraries
 * mounted read-only, the environment that loads them and names the vGPU,
 * the mediator's socket, and the device files of the vGPU's GPUs.
 */
#pragma once

#include "tools/setup/setup.h"

#include <stdbool.h>
#include <stddef.h>

/* The CDI version the spec declares: the oldest that has every field it
 * uses (a device name may start with a digit from 0.5.0), so that the most
 * runtimes read it. */
#define SETUP_CDI_VERSION "0.5.0"
#define SETUP_CDI_KIND "vgpu.dev/vgpu"

struct setup_cdi_opts {
    const char *output;      /* target path, or "-" for standard output */
    bool symlink;            /* LD_LIBRARY_PATH with the symlink directory, not LD_PRELOAD */
    bool standalone;         /* one vGPU from the options, no mediator */
    const char *vgpu;        /* standalone: its device name */
    const char *memory;      /* standalone: VGPU_MEMORY_LIMIT */
    const char *compute;     /* standalone: VGPU_COMPUTE_SHARE */
    const char *compute_mode; /* standalone: VGPU_COMPUTE_MODE */
    const char *devices;     /* standalone: its GPUs */
    const char *hook;        /* vgpu-cdi-hook, run by the runtime for a vGPU made for containers */
};

/* Writes the spec.  0, or -1 with err. */
int setup_cdi(const struct setup_ctx *c, const struct setup_cdi_opts *o, char *err, size_t errlen);
