/*
 * Readings of the driver, taken by a thread of their own: for the watch,
 * every process NVML lists on each watched GPU with what it holds there,
 * every watch_interval; for the compute views (utilization.h), the
 * per-process utilization samples the driver took on each GPU since the
 * last reading.  The driver can take its time answering (a GPU in
 * trouble); the mediator's loop never waits on it, it only takes the
 * latest reading when the sampler's descriptor says one is there.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/mediatord/gpus.h"
#include "vgpu/nvml_abi.h"

/* What a sampler reads. */
enum med_sample_kind {
    MED_SAMPLE_PROCESSES,      /* procs: the watch's */
    MED_SAMPLE_UTILIZATION,    /* samples: the compute views' */
};

struct med_reading_gpu {
    int gpu;                   /* index into the mediator's med_gpus */
    bool ok;                   /* false: the driver would not answer */
    unsigned n;
    nvmlProcessInfo_t *procs;  /* malloc'd; usedGpuMemory may be NVML_VALUE_NOT_AVAILABLE */
    nvmlProcessUtilizationSample_t *samples; /* malloc'd, or NULL when there are none */
};

struct med_reading {
    int n;
    uint64_t taken_ns;         /* CLOCK_MONOTONIC, when it was taken */
    struct med_reading_gpu gpu[MED_MAX_GPUS];
};

struct med_sampler;

/* Starts the thread, idle until med_sampler_set gives it an interval.
 * NULL with err when it cannot. */
struct med_sampler *med_sampler_start(const struct med_gpus *g, enum med_sample_kind kind, char *err,
                                      size_t errlen);

/* Readable (an eventfd) when a reading waits to be taken. */
int med_sampler_fd(const struct med_sampler *s);

/* From now on, a reading every interval_ms (0: none) of the GPUs whose bits
 * (by med_gpus index) are set in gpus. */
void med_sampler_set(struct med_sampler *s, unsigned interval_ms, uint64_t gpus);

/* Moves the latest reading into out (freed with med_reading_free); false
 * when none has come since the last one taken. */
bool med_sampler_take(struct med_sampler *s, struct med_reading *out);

void med_reading_free(struct med_reading *r);
