/* The system commands vgpu-setup runs (systemctl daemon-reload, ldconfig). */
#pragma once

#include <stddef.h>

/* Runs argv (argv[0] looked up on PATH, with /sbin and /usr/sbin after it)
 * and waits.  0 if it exits 0, else -1 with what happened in err. */
int setup_run(const char *const argv[], char *err, size_t errlen);
