/*
 * The GPUs a vGPU names (NVML indexes as nvidia-smi numbers them, or
 * GPU-... UUIDs), as a container needs them: the device file
 * /dev/nvidiaN, where N is the GPU's minor number (not always its index),
 * and the UUID, which names the GPU alike inside a container that sees
 * only some GPUs and so numbers them from 0.
 */
#pragma once

#include <stddef.h>

struct setup_gpu {
    unsigned minor;
    char uuid[96];
};

/* Resolves each of the n tokens through the driver's NVML.  0, or -1 with err. */
int setup_gpus_resolve(const char *const *tokens, int n, struct setup_gpu *out, char *err, size_t errlen);
