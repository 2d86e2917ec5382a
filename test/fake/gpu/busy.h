/*
 * Device time used, in time buckets: what the fake NVML's utilization
 * queries report.  One ring per device (all processes) and one per process
 * and device, kept in the shared state (state.c).
 *
 * Times are CLOCK_MONOTONIC nanoseconds, the clock of the device timeline
 * (timeline.c), which every process of a machine shares.
 */
#ifndef FAKEGPU_BUSY_H
#define FAKEGPU_BUSY_H

#include "test/fake/gpu/fakegpu.h"

#include <stdint.h>

/* Utilization is reported over the last second, as NVML's sample period is
 * at most one second; buckets of 100 ms make that window accurate to a few
 * percent (the oldest bucket is weighed by how much of it is in the window). */
#define FAKEGPU_BUSY_WINDOW_NS 1000000000ull
#define FAKEGPU_BUSY_BUCKET_NS 100000000ull
#define FAKEGPU_BUSY_BUCKETS 12

struct fakegpu_busy {
    uint64_t id[FAKEGPU_BUSY_BUCKETS]; /* start / FAKEGPU_BUSY_BUCKET_NS of what ns[] holds */
    uint64_t ns[FAKEGPU_BUSY_BUCKETS]; /* device time used in that bucket */
};

/* Counts [start_ns, end_ns) as busy.  Parts older than the ring are dropped. */
FAKEGPU_HIDDEN void fakegpu_busy_add(struct fakegpu_busy *b, uint64_t start_ns, uint64_t end_ns);

/* Busy nanoseconds in the window that ends at now_ns. */
FAKEGPU_HIDDEN uint64_t fakegpu_busy_window(const struct fakegpu_busy *b, uint64_t now_ns);

#endif /* FAKEGPU_BUSY_H */
