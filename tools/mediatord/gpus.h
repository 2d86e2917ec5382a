/*
 * The physical GPUs, as the driver's NVML reports them (through the same
 * pathfinder as the interposer), and the config checked against them.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "tools/mediatord/config/config.h"

#define MED_MAX_GPUS 64

struct med_gpu {
    unsigned index;    /* as nvidia-smi numbers it */
    char uuid[96];
    char name[96];
    char pci_bus_id[32]; /* NVML's busId, "00000000:01:00.0"; "" where the driver does not say */
    uint64_t total;    /* bytes of memory */
};

struct med_gpus {
    int n;
    struct med_gpu gpu[MED_MAX_GPUS];
};

/* Asks the driver's NVML.  0, or -1 with the reason in err. */
int med_gpus_discover(struct med_gpus *g, char *err, size_t errlen);

/* The GPU a config token names (an index or a GPU-... UUID), or NULL. */
const struct med_gpu *med_gpus_find(const struct med_gpus *g, const char *token);

/*
 * Every device of c exists, and on each GPU the vGPUs' memory quotas and
 * compute shares fit (unless oversubscribe = yes).  0, or -1 with
 * "FILE:LINE: reason".
 */
int med_gpus_check(const struct med_gpus *g, const struct med_config *c, char *err, size_t errlen);
