/* `vgpu-setup enable|disable --system`: the symlink directory in the
 * loader's configuration (/etc/ld.so.conf.d/000-vgpu.conf, then ldconfig),
 * so every program that loads libcuda.so.1 gets vgpu, and its removal. */
#pragma once

#include "tools/setup/setup.h"

#include <stdbool.h>
#include <stddef.h>

#define SETUP_LDSO_ENTRY "/etc/ld.so.conf.d/000-vgpu.conf"

int setup_enable_system(const struct setup_ctx *c, char *err, size_t errlen);
int setup_disable_system(const struct setup_ctx *c, char *err, size_t errlen);

/* What the cache resolves libcuda.so.1 and libnvidia-ml.so.1 to, one line
 * each through say (status), and whether both are vgpu. */
bool setup_system_report(const struct setup_ctx *c, void (*say)(const char *fmt, ...));
