/* `vgpu-setup status`: what is enabled on the target system. */
#pragma once

#include "tools/setup/setup.h"

/* Prints the report.  0, or -1 with err. */
int setup_status(const struct setup_ctx *c, char *err, size_t errlen);
