/*
 * The watch's readings of the driver: every process NVML lists on each
 * watched GPU, with what it holds there, taken every watch_interval by a
 * thread of its own.  The driver can take its time answering (a GPU in
 * trouble); the mediator's loop never waits on it, it only takes the
 * latest reading when the sampler's descriptor says one is there.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/mediatord/gpus.h"
#include "vgpu/nvml_abi.h"

struct med_reading_gpu {
    int gpu;                   /* index into the mediator's med_gpus */
    bool ok;                   /* false: the driver would not list its processes */
    unsigned n;
    nvmlProcessInfo_t *procs;  /* malloc'd; usedGpuMemory may be NVML_VALUE_NOT_AVAILABLE */
};

struct med_reading {
    int n;
    struct med_reading_gpu gpu[MED_MAX_GPUS];
};

struct med_sampler;

/* Starts the thread, idle until med_sampler_set gives it an interval.
 * NULL with err when it cannot. */
struct med_sampler *med_sampler_start(const struct med_gpus *g, char *err, size_t errlen);

/* Readable (an eventfd) when a reading waits to be taken. */
int med_sampler_fd(const struct med_sampler *s);

/* From now on, a reading every interval_ms (0: none) of the GPUs whose bits
 * (by med_gpus index) are set in gpus. */
void med_sampler_set(struct med_sampler *s, unsigned interval_ms, uint64_t gpus);

/* Moves the latest reading into out (freed with med_reading_free); false
 * when none has come since the last one taken. */
bool med_sampler_take(struct med_sampler *s, struct med_reading *out);

void med_reading_free(struct med_reading *r);
