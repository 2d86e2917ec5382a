/*
 * The device side of the fake libcuda: what each device of this process has
 * been asked to do, run later, in submission order, on the device timeline.
 *
 * One queue per CUdevice; an executor thread per queue, started by its first
 * operation, runs kernels while it holds the physical device's turn
 * (turn.h), which it shares with every process of the same
 * FAKEGPU_STATE.  A kernel of ns nanoseconds occupies the device from
 * max(when it was queued, when the device's previous kernel ended) for ns of
 * wall time; an operation counts as done only once that time has passed.
 */
#ifndef FAKE_TIMELINE_H
#define FAKE_TIMELINE_H

#include "test/fake/gpu/fakegpu.h"

#include <cuda.h>

#define FAKE_MAX_ARGS 4

struct fake_op {
    /* A kernel: device time, and what it does to memory (NULL: nothing). */
    unsigned long long ns;
    void (*run)(const unsigned long long *args);
    unsigned long long args[FAKE_MAX_ARGS];
    /* A marker (an event record) when mark is set: called with the device
     * time at which the stream reached it. */
    void (*mark)(void *what, unsigned long long gen, unsigned long long at_ns);
    void *what;
    unsigned long long gen;
    /* Set by fake_timeline_submit. */
    unsigned long long seq;
    unsigned long long submit_ns;
};

/* Appends op to CUdevice dev's queue (phys: its physical device).  Its
 * sequence number is stored (atomically) in *stream_last while the queue is
 * locked, so that a stream's latest operation is never older than what the
 * queue holds for it, and in *seq if given.  Blocks while the queue is full,
 * as the driver's launch queue does.  CUDA_ERROR_OUT_OF_MEMORY when no
 * executor thread could be started. */
FAKEGPU_HIDDEN CUresult fake_timeline_submit(int dev, int phys, const struct fake_op *op,
                                             unsigned long long *stream_last, unsigned long long *seq);

/* Whether operation seq of dev is done. */
FAKEGPU_HIDDEN int fake_timeline_done(int dev, unsigned long long seq);
/* Waits until operation seq of dev is done. */
FAKEGPU_HIDDEN void fake_timeline_wait(int dev, unsigned long long seq);
/* The sequence number of dev's latest operation (0: none yet). */
FAKEGPU_HIDDEN unsigned long long fake_timeline_latest(int dev);
/* Waits for everything this process queued on dev, or on every device. */
FAKEGPU_HIDDEN void fake_timeline_drain(int dev);
FAKEGPU_HIDDEN void fake_timeline_drain_all(void);

/* CLOCK_MONOTONIC, in nanoseconds: the clock of the device timeline. */
FAKEGPU_HIDDEN unsigned long long fake_now_ns(void);
/* Spends the rest of FAKEGPU_LAUNCH_NS since since_ns on this thread. */
FAKEGPU_HIDDEN void fake_launch_cost(unsigned long long since_ns);

#endif /* FAKE_TIMELINE_H */
