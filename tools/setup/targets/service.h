/* `vgpu-setup enable|disable --service NAME`: a systemd drop-in that puts a
 * service's CUDA programs in a vGPU, and its removal. */
#pragma once

#include "tools/setup/setup.h"
#include "tools/setup/targets/dropin.h"

#include <stdbool.h>
#include <stddef.h>

/* name as setup_unit_name() gives it.  0, or -1 with err. */
int setup_enable_service(const struct setup_ctx *c, const char *name, struct setup_service_opts *o,
                         bool allow_missing, char *err, size_t errlen);
int setup_disable_service(const struct setup_ctx *c, const char *name, char *err, size_t errlen);
