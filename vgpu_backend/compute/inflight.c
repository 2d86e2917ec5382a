/*
 * Work queued ahead, bounded (docs/design/compute.md).  A launch returns before its
 * kernel runs, and a framework can queue hundreds of milliseconds of work:
 * a vGPU whose turn ended would go on running all of it, in the next
 * holder's turn.  So each stream of a scheduled process may have at most
 * VGPU_SCHED_QUEUE_NS of GPU time queued: a marker event is recorded every
 * so many launches, and a launch that would pass the bound waits for the
 * oldest marker first.
 *
 * How much GPU time a launch takes is learnt from the markers: the GPU
 * time between two of them (the events time it) over the launches
 * between.  The markers are spaced so that four fit in the bound: one for
 * every matmul of 200 us or graph of 10 ms, one for every 50 kernels of
 * 5 us.  A marker is the costly part of a launch here (7.6-8.4 us in a
 * PyTorch process on an H100, r580: one every 20-40 of its launches).
 *
 * A launch between markers, within the bound, takes no lock and makes no
 * driver call but cuCtxGetCurrent (for a default stream): it counts itself
 * in the stream's tracker and compares the count with a limit worked out
 * when the last marker was.  The markers, and a launch past the limit, take
 * the tracker's lock.
 *
 * While a stream capture is under way in the process, the markers are
 * left alone (a query would break the capture, capture.c) and launches go
 * unbounded: captures are brief, and the gate still holds.
 */
#include "vgpu_backend/compute/inflight.h"

#include "forwarder/dispatch.h"
#include "vgpu_backend/compute/capture.h"
#include "common/contract/arbiter/sched_arbiter.h"
#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define RING 32            /* markers per stream, at most */
#define TRACKERS 256       /* explicit streams tracked per process (a power of two) */
#define MAX_EVERY 1024     /* launches between markers, at most */
#define FIRST_GUESS_NS 250000 /* a launch's GPU time until one is measured: a marker each, at first */

struct vgpu_inflight {
    pthread_mutex_t lock;    /* everything below but since, every and room */
    CUstream stream;         /* the key; CU_STREAM_LEGACY or CU_STREAM_PER_THREAD for the default ones */
    CUcontext ctx;           /* the default streams are per context */
    int used;
    CUevent ev[RING];        /* made on first use, timing off */
    uint32_t covers[RING];   /* launches each outstanding marker closes */
    bool backed_up[RING];    /* the marker before it was not done when it was recorded */
    uint32_t head, tail;     /* outstanding markers: [tail, head) */
    _Atomic uint32_t since;  /* launches since the last marker (counted without the lock) */
    _Atomic uint32_t every;  /* launches between markers */
    _Atomic uint32_t room;   /* launches since the last marker that keep the queue within the bound */
    uint64_t per_launch_ns;  /* a launch's GPU time, learnt */
    _Atomic uint64_t first_ns; /* when the first launch since the last marker returned */
    uint64_t done_by_ns;     /* when the GPU will be done with what is queued, by the estimate */
    uint32_t prev_slot;      /* the last marker seen done, whose event ... */
    bool prev_valid;         /* ... still holds its time (not recorded again since) */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Explicit streams: shared by the process's threads, each tracker under its
 * own lock (the table only grows, so a tracker's address stays valid).
 * The per-thread default stream: each thread's own.  Owned by this file. */
static struct vgpu_inflight trackers[TRACKERS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread struct vgpu_inflight per_thread;

static void fresh(struct vgpu_inflight *t, CUstream stream, CUcontext ctx)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    t->stream = stream;
    t->ctx = ctx;
    t->used = 1;
    t->every = 1;
    t->room = UINT32_MAX; /* no marker outstanding */
    t->per_launch_ns = FIRST_GUESS_NS;
}

/* The tracker of a launch on stream (NULL: none could be had). */
static struct vgpu_inflight *find(CUstream stream, bool ptsz)
{
    /* NULL is the legacy default stream, or with the _ptsz entry points the
     * per-thread one; both are the context's, so the context is the key too. */
    bool per_thread_stream = stream == CU_STREAM_PER_THREAD || (!stream && ptsz);
    CUcontext ctx = NULL;
    if (per_thread_stream || !stream || stream == CU_STREAM_LEGACY)
        VGPU_REAL_CUDA(cuCtxGetCurrent)(&ctx);
    if (per_thread_stream) {
        if (!per_thread.used || per_thread.ctx != ctx)
            fresh(&per_thread, CU_STREAM_PER_THREAD, ctx);
        return &per_thread;
    }
    if (!stream)
        stream = CU_STREAM_LEGACY;
    uintptr_t h = ((uintptr_t)stream ^ (uintptr_t)ctx) * 0x9e3779b97f4a7c15ull;
    for (unsigned probe = 0; probe < TRACKERS; probe++) {
        struct vgpu_inflight *t = &trackers[(h + probe) & (TRACKERS - 1)];
        if (!__atomic_load_n(&t->used, __ATOMIC_ACQUIRE)) {
            pthread_mutex_lock(&table_lock);
            if (!t->used) { /* else another thread took it meanwhile, maybe for this stream */
                fresh(t, stream, ctx);
                __atomic_store_n(&t->used, 1, __ATOMIC_RELEASE);
            }
            pthread_mutex_unlock(&table_lock);
        }
        if (t->stream == stream && t->ctx == ctx)
            return t;
    }
    return NULL; /* more streams than tracked: those run unbounded */
}

/* Works out, under the lock, how many launches since the last marker the
 * queue takes before it is past the bound: its launches times a launch's
 * GPU time over VGPU_SCHED_QUEUE_NS, or the ring full.  No marker
 * outstanding: no bound (one is recorded within `every` launches). */
static void set_room(struct vgpu_inflight *t)
{
    uint64_t room = UINT32_MAX, closed = 0;
    for (uint32_t i = t->tail; i != t->head; i++)
        closed += t->covers[i % RING];
    if (t->head - t->tail == RING) {
        room = 0;
    } else if (t->tail != t->head) {
        uint64_t fits = VGPU_SCHED_QUEUE_NS / (t->per_launch_ns ? t->per_launch_ns : 1);
        room = fits < closed ? 0 : fits - closed + 1;
        if (room > UINT32_MAX)
            room = UINT32_MAX;
    }
    atomic_store_explicit(&t->room, (uint32_t)room, memory_order_relaxed);
}

static bool past_bound(const struct vgpu_inflight *t)
{
    return atomic_load_explicit(&t->since, memory_order_relaxed) >=
           atomic_load_explicit(&t->room, memory_order_relaxed);
}

/* Learns a launch's GPU time from marker i (its ring slot), just seen
 * done: the GPU time between the previous marker and it, over the launches
 * it closes.  When the stream was backed up as it was recorded (the
 * previous marker not done yet), the GPU ran those launches back to back
 * and the time is theirs: taken, even far up at once (a graph of 10 ms
 * after kernels of 5 us must not queue a hundred of them).  Otherwise the
 * stream may have run dry in between (a loop bound by its host, or held at
 * the gate while another vGPU had the GPU): the time is only a bound from
 * above, and may only lower the estimate. */
static void learn(struct vgpu_inflight *t, uint32_t slot)
{
    if (t->prev_valid && t->covers[slot]) {
        float ms = 0;
        if (VGPU_REAL_CUDA(cuEventElapsedTime)(&ms, t->ev[t->prev_slot], t->ev[slot]) == CUDA_SUCCESS && ms >= 0) {
            uint64_t seen = (uint64_t)((double)ms * 1e6) / t->covers[slot];
            if (t->backed_up[slot] && seen > t->per_launch_ns)
                t->per_launch_ns = seen;
            else if (seen < t->per_launch_ns || t->backed_up[slot])
                t->per_launch_ns = (t->per_launch_ns * 3 + seen) / 4;
            if (!t->per_launch_ns)
                t->per_launch_ns = 1;
        }
    }
    t->prev_slot = slot;
    t->prev_valid = true;
}

/* Retires the oldest marker, waiting for it when wait; false when it is not done and wait is false. */
static bool retire(struct vgpu_inflight *t, bool wait)
{
    uint32_t slot = t->tail % RING;
    CUresult r = VGPU_REAL_CUDA(cuEventQuery)(t->ev[slot]);
    if (r == CUDA_ERROR_NOT_READY) {
        if (!wait)
            return false;
        r = VGPU_REAL_CUDA(cuEventSynchronize)(t->ev[slot]);
    }
    if (r == CUDA_SUCCESS)
        learn(t, slot);
    else
        t->prev_valid = false; /* an error (the context's): nothing to learn from it */
    t->tail++;
    set_room(t);
    return true;
}

struct vgpu_inflight *vgpu_inflight_before(CUstream stream, bool ptsz, _Atomic uint32_t *running)
{
    if (vgpu_captures_underway())
        return NULL;
    struct vgpu_inflight *t = find(stream, ptsz);
    if (!t || !past_bound(t))
        return t; /* within the bound: no lock, no driver call */
    if (!vgpu_capture_quiet_enter())
        return NULL;
    /* The done markers go first, then the launch waits for the oldest
     * while the queue is still past the bound. */
    pthread_mutex_lock(&t->lock);
    while (t->tail != t->head && retire(t, false))
        ;
    if (past_bound(t)) {
        atomic_fetch_add(running, 1);
        while (t->tail != t->head && past_bound(t))
            retire(t, true);
        vgpu_sched_count_leave(running);
    }
    pthread_mutex_unlock(&t->lock);
    vgpu_capture_quiet_leave();
    return t;
}

/* Under the lock, as the marker in slot was just recorded: the GPU time
 * still to run on the stream.  The GPU runs the launches in order, each in
 * a launch's GPU time, none before it was made: the marker's launches
 * start when both the GPU is done with those before and the first of them
 * was made (a loop bound by its host, whose GPU runs each kernel as it
 * comes, has nothing queued; a graph of 10 ms launched after a pause has
 * 10 ms).  An older marker still outstanding says the GPU is not done
 * before now; none, that it was. */
static uint64_t estimate_queue(struct vgpu_inflight *t, uint32_t slot, uint64_t now)
{
    if (t->backed_up[slot] ? t->done_by_ns < now : t->done_by_ns > now)
        t->done_by_ns = now;
    uint64_t first = atomic_load_explicit(&t->first_ns, memory_order_relaxed);
    uint64_t start = first > t->done_by_ns ? first : t->done_by_ns;
    t->done_by_ns = start + t->covers[slot] * t->per_launch_ns;
    return t->done_by_ns > now ? t->done_by_ns - now : 0;
}

uint64_t vgpu_inflight_after(struct vgpu_inflight *t, bool *behind)
{
    *behind = false;
    uint32_t n = atomic_fetch_add_explicit(&t->since, 1, memory_order_relaxed) + 1;
    if (n == 1)
        atomic_store_explicit(&t->first_ns, now_ns(), memory_order_relaxed);
    if (n < atomic_load_explicit(&t->every, memory_order_relaxed))
        return UINT64_MAX;
    if (!vgpu_capture_quiet_enter())
        return UINT64_MAX;
    uint64_t queued = UINT64_MAX;
    pthread_mutex_lock(&t->lock);
    /* Another thread may have recorded the marker meanwhile. */
    if (atomic_load_explicit(&t->since, memory_order_relaxed) >= atomic_load_explicit(&t->every, memory_order_relaxed)) {
        /* One query per marker retires the done ones, so the estimate of what is queued stays true. */
        while (t->tail != t->head && retire(t, false))
            ;
        uint32_t slot = t->head % RING;
        if (slot == t->prev_slot)
            t->prev_valid = false;
        if ((t->ev[slot] || VGPU_REAL_CUDA(cuEventCreate)(&t->ev[slot], CU_EVENT_DEFAULT) == CUDA_SUCCESS) &&
            VGPU_REAL_CUDA(cuEventRecord)(t->ev[slot], t->stream) == CUDA_SUCCESS) {
            t->backed_up[slot] = t->tail != t->head; /* the done ones were just retired */
            t->covers[slot] = atomic_exchange_explicit(&t->since, 0, memory_order_relaxed);
            t->head++;
            queued = estimate_queue(t, slot, now_ns());
            *behind = t->backed_up[slot];
        }
        /* A few markers within the bound. */
        uint64_t every = VGPU_SCHED_QUEUE_NS / 4 / (t->per_launch_ns ? t->per_launch_ns : 1);
        atomic_store_explicit(&t->every, every < 1 ? 1 : every > MAX_EVERY ? MAX_EVERY : (uint32_t)every,
                              memory_order_relaxed);
        set_room(t);
    }
    pthread_mutex_unlock(&t->lock);
    vgpu_capture_quiet_leave();
    return queued;
}
