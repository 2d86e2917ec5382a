/*
 * A vGPU's settings as the environment gives them in standalone mode (no
 * mediator): VGPU_VISIBLE_DEVICES, VGPU_MEMORY_LIMIT, VGPU_BAR0.  Parsing is
 * pure (strings in, struct or message out) so every rule is unit-tested.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VGPU_MAX_DEVICES 16
#define VGPU_DEVICE_TOKEN_LEN 48 /* "GPU-" + 36-character UUID, with room */

struct vgpu_settings {
    /* True when any VGPU_* vGPU variable is set: the process is in a vGPU.
     * False: vgpu only forwards, as with no vGPU at all. */
    bool active;

    /* VGPU_VISIBLE_DEVICES: physical devices in vGPU order, each a decimal
     * NVML index or a "GPU-..." UUID.  listed == false: every device. */
    bool listed;
    int ndevices;
    char devices[VGPU_MAX_DEVICES][VGPU_DEVICE_TOKEN_LEN];

    /* VGPU_MEMORY_LIMIT in bytes per vGPU device; 0 = no limit.  A single
     * size applies to every device; the per-device form sets listed ones. */
    uint64_t limit_all;
    uint64_t limit[VGPU_MAX_DEVICES];
    bool limit_set[VGPU_MAX_DEVICES];

    /* VGPU_COMPUTE_SHARE in percent per vGPU device (0 = not set: the
     * whole GPU, unscheduled), as VGPU_MEMORY_LIMIT; VGPU_COMPUTE_MODE. */
    unsigned share_all;
    unsigned share[VGPU_MAX_DEVICES];
    bool share_set[VGPU_MAX_DEVICES];
    unsigned compute_mode; /* enum vgpu_compute_mode */

    /* VGPU_BAR0, or the default path for this user and device set, in
     * bar0_dir (a directory of the user's own; "" with VGPU_BAR0). */
    bool bar0_explicit;
    char bar0[4096];
    char bar0_dir[64];
};

/* How a vGPU's compute share holds (docs/design/compute.md). */
enum vgpu_compute_mode {
    VGPU_COMPUTE_SHARE_MODE = 0, /* work-conserving: the share is guaranteed, idle time is lent out */
    VGPU_COMPUTE_CAP = 1,        /* a hard cap: never more than the share, even on an idle GPU */
};

/* The environment's values (NULL = unset). */
struct vgpu_settings_env {
    const char *visible, *limit, *bar0, *share, *mode;
};

/*
 * Parses the values.  Returns 0, or -1 with a message naming the variable
 * and saying what is accepted in err.
 */
int vgpu_settings_parse(const struct vgpu_settings_env *e, uid_t uid, struct vgpu_settings *s, char *err,
                        size_t errlen);

/* Reads the environment and parses it. */
int vgpu_settings_from_env(struct vgpu_settings *s, char *err, size_t errlen);

/* The limit for vGPU device i (0 = none). */
uint64_t vgpu_settings_limit(const struct vgpu_settings *s, int i);
/* The compute share of vGPU device i in percent (100 when none is set). */
unsigned vgpu_settings_share(const struct vgpu_settings *s, int i);

/* "30%", "30": a percent of a device, 1 to 100.  0, or -1. */
int vgpu_parse_percent(const char *text, unsigned *percent);
/* "share" or "cap".  0, or -1. */
int vgpu_parse_compute_mode(const char *text, unsigned *mode);

/* "20G", "512M", "1.5G", "1048576", "8GiB": bytes, powers of 1024.  Returns
 * 0, or -1 if text is not a positive size. */
int vgpu_parse_size(const char *text, uint64_t *bytes);

/* Splits a comma-separated list in place into at most max fields, each
 * trimmed of blanks, empty ones dropped; the count, or -1 past max. */
int vgpu_split_list(char *text, char **fields, int max);

/* Formats bytes for messages: "4.00 GiB". */
const char *vgpu_format_size(uint64_t bytes, char *buf, size_t len);
