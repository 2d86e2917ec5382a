/* Stream captures under way in this process; see capture.c. */
#pragma once

#include <cuda.h>
#include <stdbool.h>

/* Whether a capture may be under way (one begun and not ended). */
bool vgpu_captures_underway(void);

/* Whether a launch on stream (ptsz: NULL is the per-thread default stream)
 * is recorded into a graph rather than run.  Asks the driver only while a
 * capture is under way. */
bool vgpu_stream_captured(CUstream stream, bool ptsz);

/*
 * The compute share's bookkeeping calls the driver (its markers' events)
 * only inside a section: enter returns false, and no section is entered,
 * while a capture is under way or beginning.  A capture begins only once
 * the sections in progress have left, so no query of vgpu's can fall
 * inside one.
 */
bool vgpu_capture_quiet_enter(void);
void vgpu_capture_quiet_leave(void);
