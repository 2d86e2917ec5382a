/*
 * The compute share's views (docs/guide/mediator.md, "Views"): what each vGPU
 * device and each admitted process used of its GPU over the last interval
 * (MED_VIEWS_INTERVAL_MS), for vgpu-smi (COMPUTE) and the metrics.
 *
 *   held         GPU time the arbiter (sched.h) charged the vGPU's device
 *                over the interval, by the mediator's own clock: what the
 *                share gave it.  Only on a GPU the mediator arbitrates.
 *   utilization  of a process: the driver's per-process samples
 *                (nvmlDeviceGetProcessUtilization, read on a thread of
 *                their own, watch_sampler.h) taken over the interval,
 *                averaged; of a vGPU's device: the sum over the vGPU's
 *                admitted processes, at most 100%.  What the processes
 *                used, whoever's turn it was.
 *
 * Both are measured between two readings of the driver, taken every
 * interval; the figures are kept in the vGPUs' and admissions' records
 * (struct med_compute_use).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/mediatord/compute/sched.h"
#include "tools/mediatord/mediatord.h"
#include "tools/mediatord/watch/watch_sampler.h"

#define MED_VIEWS_INTERVAL_MS 1000

struct med_views {
    const struct med_gpus *gpus;
    const struct med_sched *sched;  /* the arbiters: charged time, who holds each GPU */
    struct med_sampler *sampler;
    uint64_t read;                  /* GPUs (bits by med_gpus index) the sampler reads */
    uint64_t failing;               /* GPUs whose utilization the driver would not give (said once) */
    uint64_t last_ns;               /* when the previous reading was taken; 0: none yet */
    uint32_t interval_ms;           /* the last interval's length, as measured; 0: none measured yet */
    uint64_t intervals;             /* intervals measured since start */
};

/* Starts the sampler (idle until configured).  0, or -1 with err. */
int med_views_start(struct med_views *m, const struct med_gpus *g, const struct med_sched *s, char *err,
                    size_t errlen);

/* The sampler's descriptor, for the loop: readable when a reading waits. */
int med_views_fd(const struct med_views *m);

/* Takes the vGPUs as they are now: the GPUs to read (those a vGPU uses).
 * At start, after a reload; each reading does it again. */
void med_views_configure(struct med_views *m, const struct med_world *world);

/* A reading is there: the last interval's figures of every vGPU device and process. */
void med_views_readable(struct med_views *m, struct med_world *world);

/*
 * Where the arbiter of GPU gi has v's device d: its charged GPU time and
 * launch counter.  False when it has no entry for it (no vGPU on that GPU
 * ever had a share).
 */
bool med_views_charged(const struct med_sched *s, int gi, const struct med_vgpu *v, int d, uint64_t *busy_ns,
                       uint64_t *launches);

