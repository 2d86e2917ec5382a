/*
 * The compute share's gate (docs/design/compute.md): every launch path (kernels,
 * cuLaunchKernelEx, cooperative kernels, graphs) asks here first.  A GPU
 * time-slices between processes, so what decides a vGPU's share is when its
 * processes may put work on the GPU: the arbiter (sched_arbiter.h) gives a
 * GPU to one vGPU at a time, a quantum at a time, and a launch of a vGPU
 * that does not hold its GPU waits until it does.  Under vgpu-mediatord the
 * mediator arbitrates and writes each vGPU's grant into its BAR0; standalone
 * vGPUs of a user arbitrate among themselves through a page they share
 * (sched_page.h).  Queued work is bounded (inflight.c), so a vGPU whose
 * turn ended does not run on into the next one's.
 *
 * With no share anywhere, a launch costs a load or two here.
 */
#define _GNU_SOURCE
#include "common/log.h"
#include "vgpu_backend/backend.h"
#include "vgpu_backend/compute/capture.h"
#include "vgpu_backend/compute/inflight.h"
#include "common/contract/arbiter/futex.h"
#include "common/contract/arbiter/sched_page.h"
#include "common/contract/window/user_dir.h"
#include "vgpu_backend/join/cuda_devices.h"
#include "vgpu_backend/join/current.h"
#include "vgpu_backend/join/self.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* A mediator that has not arbitrated a GPU for this long has stopped: its
 * vGPUs' launches go ahead, unscheduled, rather than wait for ever. */
#define MEDIATOR_STALE_NS 1000000000ull
#define MARK_EVERY_NS 1000000ull /* how often a process says it is launching */

struct gate {
    struct vgpu_bar0_device_status *st; /* the vGPU device's status (waiting, activity, busy) */
    struct vgpu_bar0_device_turn *turn; /* mediated: its turn (grant, beat), the mediator's alone to write */
    struct vgpu_sched_page *page;       /* standalone: the GPU's shared page; NULL: the mediator arbitrates */
    _Atomic int entry;                  /* standalone: the vGPU's entry in the page (taken anew by any thread) */
    uint64_t dev, ino;                  /* standalone: whose the entry is (the BAR0 file) */
    uint32_t vdev, share, mode;
    bool scheduled;                     /* standalone: it has a share (a mediated one asks its registers) */
    uint64_t poll_ns;                   /* mediated: how long a waiter sleeps before looking again */
    _Atomic uint64_t marked_ns;         /* when this process last said it was launching */
    _Atomic uint64_t seen_beat;         /* mediated: the mediator's beat as last seen ... */
    _Atomic uint64_t seen_at;           /* ... and when, by this process's clock, it last moved */
};

/* Set up once per process (pthread_once), read-only afterwards but for
 * marked_ns; owned by this file. */
static struct {
    bool any;        /* some device may be scheduled */
    int only;        /* the vGPU device, when the vGPU has one; else -1 */
    struct gate g[VGPU_MAX_DEVICES];
} gates;
static pthread_once_t set_up_once = PTHREAD_ONCE_INIT;
static _Atomic bool stale_said; /* the mediator's silence was logged (and not its return yet) */
/* The queue of this thread's launch in flight, when it went through a gate
 * (admit to done). */
static __thread struct vgpu_inflight *gated;
static __thread struct gate *gated_by; /* its gate */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_up(void)
{
    struct vgpu_self *self = vgpu_self_on();
    if (!self)
        return;
    gates.only = self->ndev == 1 ? 0 : -1;
    const struct vgpu_bar0_config *c = &self->bar0.bar->config;
    for (int d = 0; d < self->ndev; d++) {
        struct gate *g = &gates.g[d];
        g->st = &self->bar0.bar->status.device[d];
        g->turn = &self->bar0.bar->turn[d];
        /* A host mediator wakes its waiters (a futex on the grant); a VM's
         * processes are in another kernel, so they look every millisecond. */
        g->poll_ns = self->source == VGPU_SOURCE_GUEST ? 1000000 : 50000000;
        if (self->source != VGPU_SOURCE_STANDALONE) {
            gates.any = true; /* the mediator may schedule it at any time */
            continue;
        }
        uint32_t share = c->device[d].compute_share, mode = c->device[d].compute_mode;
        if (share >= 100 && mode != VGPU_COMPUTE_CAP)
            continue;
        char err[1024], dir[64];
        g->dev = self->bar0.file_dev;
        g->ino = self->bar0.file_ino;
        g->vdev = (uint32_t)d;
        g->share = share * 10;
        g->mode = mode;
        int entry = -1;
        if (vgpu_user_dir(dir, sizeof(dir), err, sizeof(err)) == 0)
            g->page = vgpu_sched_page_open(dir, self->dev[d].uuid, g->dev, g->ino, g->vdev, g->share, mode, &entry,
                                           err, sizeof(err));
        g->entry = entry;
        if (!g->page) {
            vgpu_warn("vGPU device %d: its compute share of %u%% is not enforced: %s", d, share, err);
            continue;
        }
        g->scheduled = gates.any = true;
        vgpu_info("vGPU device %d: a compute share of %u%% (%s), arbitrated with this user's other vGPUs on GPU %s",
                  d, share, mode == VGPU_COMPUTE_CAP ? "a hard cap" : "work-conserving", self->dev[d].uuid);
    }
}

/* The device's gate, when its launches are scheduled now; else NULL. */
static struct gate *gate_of_launch(uint64_t now)
{
    int vdev = gates.only;
    if (vdev < 0) {
        /* A launch's stream is its current context's: the device is that one's. */
        if ((vdev = vgpu_current_vdev(NULL, NULL)) < 0)
            return NULL;
    }
    struct gate *g = &gates.g[vdev];
    if (g->page)
        return g;
    if (g->scheduled)
        return NULL;
    uint64_t beat = atomic_load_explicit(&g->turn->beat, memory_order_acquire);
    if (!beat)
        return NULL;
    /* The beat is the mediator's counter (a VM's clock is not the host's):
     * silent for MEDIATOR_STALE_NS by this process's clock, it has stopped. */
    if (beat != atomic_load_explicit(&g->seen_beat, memory_order_relaxed)) {
        atomic_store_explicit(&g->seen_beat, beat, memory_order_relaxed);
        atomic_store_explicit(&g->seen_at, now, memory_order_relaxed);
        if (atomic_load_explicit(&stale_said, memory_order_relaxed) && atomic_exchange(&stale_said, false))
            vgpu_info("vgpu-mediatord arbitrates vGPU device %d's GPU again", vdev);
        return g;
    }
    uint64_t at = atomic_load_explicit(&g->seen_at, memory_order_relaxed), since = now > at ? now - at : 0;
    if (since > MEDIATOR_STALE_NS) {
        if (!atomic_exchange(&stale_said, true))
            vgpu_warn("vgpu-mediatord has not arbitrated vGPU device %d's GPU for %.1f s: its launches go ahead, "
                      "unscheduled, until it is back", vdev, (double)since / 1e9);
        return NULL;
    }
    return g;
}

/* The vGPU may launch: it holds the GPU, or the holder left the GPU open
 * (standalone: the page says so; mediated: the mediator's grant does). */
static bool granted(struct gate *g, uint64_t now)
{
    if (g->page)
        return vgpu_sched_page_may_launch(g->page, g->entry, g->mode == VGPU_COMPUTE_CAP, now) &&
               vgpu_sched_page_owns(g->page, g->entry, g->dev, g->ino, g->vdev);
    return atomic_load_explicit(&g->turn->grant, memory_order_acquire) != 0;
}

/* Says, about once a millisecond, that this vGPU is launching: its demand. */
static void mark_active(struct gate *g, uint64_t now, bool now_given)
{
    /* now_given: the vGPU was just given the GPU, and launches: said at
     * once, or the arbiter would take it for idle (its last word was
     * before the wait). */
    if (!now_given && now - atomic_load_explicit(&g->marked_ns, memory_order_relaxed) < MARK_EVERY_NS)
        return;
    atomic_store_explicit(&g->marked_ns, now, memory_order_relaxed);
    if (g->page) {
        atomic_store(&g->page->who[g->entry].active_ns, now);
        /* Whether the holder still leaves the GPU idle: those who launch
         * beside it are the ones to stop when it no longer does.  Not the
         * holder's own launches: a thread that launches is not waiting,
         * and would take its own moment for the holder's. */
        if (vgpu_sched_holder(&g->page->state) != g->entry)
            vgpu_sched_page_sample(g->page, now);
        /* The page holds the vGPU's GPU time; BAR0 shows it, as the mediator's. */
        atomic_store(&g->st->sched_busy_ns, __atomic_load_n(&g->page->state.e[g->entry].busy_ns, __ATOMIC_RELAXED));
    } else {
        atomic_fetch_add(&g->st->sched_launches, 1);
    }
}

/* Waits until the vGPU holds its GPU (standalone: stepping the page's
 * arbiter itself when a step is due). */
static void wait_for_gpu(struct gate *g, uint64_t now)
{
    if (!g->page) {
        atomic_fetch_add(&g->st->sched_waiting, 1);
        for (; !granted(g, now) && gate_of_launch(now); now = now_ns())
            vgpu_futex_wait(&g->turn->grant, 0, g->poll_ns);
        atomic_fetch_sub(&g->st->sched_waiting, 1);
        return;
    }
    /* Counted in the entry the vGPU has now: it may have been dropped
     * while the process idled (a minute, others running), and a count in
     * a dropped entry is no demand, so the GPU would never be given. */
    int entry = g->entry;
    uint8_t taking = 0;
    bool counted = false;
    for (;; now = now_ns()) {
        if (!counted || !vgpu_sched_page_counted(g->page, entry, taking, g->dev, g->ino, g->vdev)) {
            if (vgpu_sched_page_wait_begin(g->page, g->dev, g->ino, g->vdev, g->share, g->mode, &entry, &taking) != 0)
                return; /* the page is full: unscheduled, as the set-up's warning said it could be */
            counted = true;
            g->entry = entry;
        }
        vgpu_sched_page_step(g->page, now);
        uint32_t seen = atomic_load(&g->page->generation);
        if (granted(g, now))
            break;
        /* Woken when the holder changes; else again when its quantum
         * ends, or in a millisecond to see whether it went idle. */
        uint64_t until = vgpu_sched_until(&g->page->state), t = until > now ? until - now : 0;
        vgpu_futex_wait(&g->page->generation, seen, t < 50000 ? 50000 : t > 1000000 ? 1000000 : t);
    }
    vgpu_sched_page_wait_end(g->page, entry, taking, g->dev, g->ino, g->vdev);
}

CUresult vgpu_backend_launch_admit(CUstream stream, bool ptsz)
{
    gated = NULL;
    if (!vgpu_self_on())
        return CUDA_SUCCESS;
    pthread_once(&set_up_once, set_up);
    if (!gates.any)
        return CUDA_SUCCESS;
    uint64_t now = now_ns();
    struct gate *g = gate_of_launch(now);
    if (!g || vgpu_stream_captured(stream, ptsz))
        return CUDA_SUCCESS; /* a launch into a capture is recorded into a graph: it runs nothing now */
    /* The queue's bound first: a launch that waits there (for a graph of
     * 10 ms queued before it) may find the turn over when it is done, and
     * must then wait for the GPU like any other.  Admitted before that
     * wait, it would run its whole length in the next holder's turn. */
    gated = vgpu_inflight_before(stream, ptsz, g->page ? &g->page->who[g->entry].running : &g->st->sched_running);
    gated_by = g;
    if (gated)
        now = now_ns();
    bool given = false; /* it waited, and was just given the GPU */
    if (!granted(g, now)) {
        /* Its quantum may simply be over: it may keep the GPU.  The step
         * comes before this launch is marked, so that it sees when the vGPU
         * last launched: a pause since (a warm-up done, a request awaited)
         * is charged to no one.  Marked first, the pause would count as
         * GPU time held, and a cap would owe it for seconds. */
        if (g->page)
            vgpu_sched_page_step(g->page, now);
        if (!granted(g, now_ns())) {
            wait_for_gpu(g, now);
            now = now_ns();
            given = true;
        }
    }
    mark_active(g, now, given);
    return CUDA_SUCCESS;
}

void vgpu_backend_launch_done(CUresult r)
{
    if (!gated || r != CUDA_SUCCESS)
        return;
    bool behind;
    uint64_t queued = vgpu_inflight_after(gated, &behind);
    if (queued == UINT64_MAX)
        return;
    /* What this vGPU has queued, for the arbiter to charge it when its
     * turn ends, and what the GPU is certainly behind on, for its fill
     * (docs/design/compute.md): of this stream, as its marker saw it, the last
     * word of any of its processes. */
    struct gate *g = gated_by;
    uint64_t behind_ns = behind ? queued : 0;
    if (g->page) {
        uint64_t now = now_ns();
        atomic_store_explicit(&g->page->who[g->entry].queued_until_ns, now + queued, memory_order_relaxed);
        atomic_store_explicit(&g->page->who[g->entry].behind_until_ns, now + behind_ns, memory_order_relaxed);
    } else {
        atomic_store_explicit(&g->st->sched_queued_ns, queued, memory_order_relaxed);
        atomic_store_explicit(&g->st->sched_behind_ns, behind_ns, memory_order_relaxed);
        atomic_fetch_add_explicit(&g->st->sched_queued_seq, 1, memory_order_release);
    }
}

void *vgpu_backend_sync_begin(void)
{
    if (!vgpu_self_on())
        return NULL;
    pthread_once(&set_up_once, set_up);
    if (!gates.any)
        return NULL;
    struct gate *g = gate_of_launch(now_ns());
    if (!g)
        return NULL;
    _Atomic uint32_t *running = g->page ? &g->page->who[g->entry].running : &g->st->sched_running;
    atomic_fetch_add(running, 1);
    return (void *)running;
}

void vgpu_backend_sync_end(void *busy)
{
    if (busy)
        vgpu_sched_count_leave((_Atomic uint32_t *)busy);
}
