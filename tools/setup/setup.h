/*
 * vgpu-setup: what every command shares.  Paths are the target system's
 * ("/etc/..."); --root DIR puts that system under DIR, and setup_path() is
 * the one place that joins the two.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define SETUP_CUDA_LIB "libvgpu-cuda.so"
#define SETUP_NVML_LIB "libvgpu-nvml.so"
#define SETUP_STATE_DIR "/var/lib/vgpu/setup"
#define SETUP_DEFAULT_CONFIG "/etc/vgpu/mediatord.conf"
#define SETUP_DEFAULT_SOCKET "/run/vgpu/mediator.sock"

struct setup_ctx {
    char root[PATH_MAX];     /* "" for the running system, else --root without a trailing '/' */
    char libdir[PATH_MAX];   /* vgpu's libraries, as the target system names them */
    char linkdir[PATH_MAX];  /* libdir/vgpu: libcuda.so.1 and libnvidia-ml.so.1 that are vgpu */
    const char *systemctl;   /* NULL: systemd is not the target's (--root), so no reload */
    const char *ldconfig;
    const char *config;      /* vgpu-mediatord's config, target path */
    bool config_given;       /* named with --config: it must be there */
};

/* root + path into out; -1 if it does not fit. */
int setup_path(const struct setup_ctx *c, const char *path, char *out, size_t len);

/* What vgpu-setup tells its user: what it did to stdout; notes (where
 * stdout may be a spec) and warnings to stderr. */
void setup_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void setup_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void setup_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Are vgpu's libraries (and with links, the symlink directory) installed
 * at libdir in the target system, and vgpu?  0, or -1 with err. */
int setup_check_libs(const struct setup_ctx *c, bool links, char *err, size_t errlen);
