/*
 * Stream captures under way in this process (docs/design/compute.md, "CUDA
 * graphs").  A capture records launches into a graph instead of running
 * them; while one in the global mode (PyTorch's and vLLM's) is under way, a
 * query or a synchronisation from any thread of the process in that mode
 * (every thread's default) makes the driver invalidate the capture, and
 * the program's graph is lost.  The compute share keeps markers (events)
 * on the streams it bounds, and queries them: it must not while a capture
 * is under way.  So the capture hooks count the captures begun and not
 * ended, a capture waits to begin until vgpu's driver calls in progress
 * are done, and launches into a capturing stream, which run nothing, pass
 * the gate.
 */
#define _GNU_SOURCE
#include "vgpu_backend/backend.h"
#include "vgpu_backend/compute/capture.h"

#include "forwarder/dispatch.h"
#include "vgpu_cuda_slots.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#define TRACKED 64

/* Owned by this file, lock-free (a fork may come at any point): the
 * captures begun, each by its stream's key (a per-thread default stream is
 * its thread's); those begun past TRACKED, which are matched by count;
 * how many are under way or beginning; and how many bookkeeping sections
 * are in progress. */
static _Atomic uint64_t tracked[TRACKED];
static _Atomic int untracked;
static _Atomic int underway;
static _Atomic int in_quiet;

static uint64_t key_of(CUstream s, bool ptsz)
{
    if (s == CU_STREAM_PER_THREAD || (!s && ptsz))
        return ((uint64_t)gettid() << 2) | 3; /* handles are aligned: their low bits are 0 */
    return (uint64_t)(uintptr_t)s;
}

bool vgpu_captures_underway(void)
{
    return atomic_load(&underway) > 0;
}

bool vgpu_stream_captured(CUstream s, bool ptsz)
{
    if (!vgpu_captures_underway() || s == CU_STREAM_LEGACY || (!s && !ptsz))
        return false; /* the legacy stream cannot be captured */
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = !s ? VGPU_REAL_CUDA(cuStreamIsCapturing_ptsz)(NULL, &st) : VGPU_REAL_CUDA(cuStreamIsCapturing)(s, &st);
    return r == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool vgpu_backend_stream_captured(CUstream stream, bool ptsz)
{
    return vgpu_stream_captured(stream, ptsz);
}

bool vgpu_capture_quiet_enter(void)
{
    if (atomic_load(&underway))
        return false;
    atomic_fetch_add(&in_quiet, 1);
    if (atomic_load(&underway)) { /* one began meanwhile: it waits for us to leave */
        atomic_fetch_sub(&in_quiet, 1);
        return false;
    }
    return true;
}

void vgpu_capture_quiet_leave(void)
{
    atomic_fetch_sub(&in_quiet, 1);
}

void vgpu_backend_capture_beginning(void)
{
    atomic_fetch_add(&underway, 1);
    /* The sections in progress end within a marker's wait (the queue bound). */
    for (unsigned spins = 0; atomic_load(&in_quiet) > 0; spins++)
        if (spins > 64)
            sched_yield();
}

void vgpu_backend_capture_begun(CUstream s, bool ptsz, CUresult r)
{
    if (r != CUDA_SUCCESS) {
        atomic_fetch_sub(&underway, 1);
        return;
    }
    uint64_t key = key_of(s, ptsz);
    for (int i = 0; i < TRACKED; i++) {
        uint64_t none = 0;
        if (atomic_compare_exchange_strong(&tracked[i], &none, key))
            return;
    }
    atomic_fetch_add(&untracked, 1);
}

void vgpu_backend_capture_ended(CUstream s, bool ptsz, CUresult r)
{
    /* These say there was no capture of the stream to end. */
    if (r == CUDA_ERROR_ILLEGAL_STATE || r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_INVALID_VALUE ||
        r == CUDA_ERROR_DEINITIALIZED || r == CUDA_ERROR_NOT_INITIALIZED)
        return;
    uint64_t key = key_of(s, ptsz);
    for (int i = 0; i < TRACKED; i++) {
        uint64_t k = key;
        if (atomic_load(&tracked[i]) == key && atomic_compare_exchange_strong(&tracked[i], &k, 0)) {
            atomic_fetch_sub(&underway, 1);
            return;
        }
    }
    for (int n = atomic_load(&untracked); n > 0;)
        if (atomic_compare_exchange_weak(&untracked, &n, n - 1)) {
            atomic_fetch_sub(&underway, 1);
            return;
        }
}
