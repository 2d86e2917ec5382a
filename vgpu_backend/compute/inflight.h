/* Work queued ahead, bounded per stream; see inflight.c and docs/design/compute.md. */
#pragma once

#include <cuda.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* GPU time a stream of a scheduled process may have queued. */
#define VGPU_SCHED_QUEUE_NS 1000000ull

/* A stream's queue, as inflight.c tracks it. */
struct vgpu_inflight;

/* Before a launch on stream (ptsz: through a _ptsz entry point, where NULL
 * is the per-thread default stream): waits while the stream's queued work
 * is past the bound, counted in *running meanwhile (the vGPU is busy on
 * its GPU, not idle, though it launches nothing).  Returns the stream's
 * queue, for vgpu_inflight_after; NULL when it is not tracked (a capture
 * under way, more streams than tracked). */
struct vgpu_inflight *vgpu_inflight_before(CUstream stream, bool ptsz, _Atomic uint32_t *running);
/* After a successful launch on the queue vgpu_inflight_before returned.
 * Returns the GPU time of the work queued on it and still to run, as
 * estimated when this launch recorded a marker; UINT64_MAX when it did not
 * (no estimate made).  *behind: an older marker was still outstanding then,
 * so the GPU is certainly running the stream's work (a queue estimated with
 * none outstanding may be a host-bound loop's, whose launches' GPU time is
 * known only as no more than their spacing). */
uint64_t vgpu_inflight_after(struct vgpu_inflight *q, bool *behind);
