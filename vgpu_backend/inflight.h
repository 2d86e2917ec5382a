/* Work queued ahead, bounded per stream; see inflight.c and docs/compute.md. */
#pragma once

#include <cuda.h>
#include <stdbool.h>

/* GPU time a stream of a scheduled process may have queued. */
#define VGPU_SCHED_QUEUE_NS 1000000ull

/* Before a launch on stream (ptsz: through a _ptsz entry point, where NULL
 * is the per-thread default stream): waits while the stream's queued work
 * is past the bound. */
void vgpu_inflight_before(CUstream stream, bool ptsz);
/* After a successful launch on it. */
void vgpu_inflight_after(CUstream stream, bool ptsz);
