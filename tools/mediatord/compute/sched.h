/*
 * The mediator's side of the compute share (docs/design/compute.md): for each
 * physical GPU that one of its vGPUs has a share of, it runs the arbiter
 * (common/contract/arbiter/sched_arbiter.h) over the vGPUs on that GPU, about every
 * millisecond, and writes the outcome into their BAR0s: which may launch
 * (the holder, and while it leaves the GPU idle the vGPUs in share mode;
 * the grant, a futex their waiting threads sleep on), a beat that
 * tells their processes the mediator is arbitrating, and the GPU time each
 * was charged.  What it reads there (threads waiting, launches) is only
 * demand: a process that forges it gains no more than its share's turn.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "tools/mediatord/gpus.h"
#include "tools/mediatord/vgpus/vgpus.h"
#include "common/contract/arbiter/sched_arbiter.h"

/* One vGPU device on a GPU: an entry of that GPU's arbiter. */
struct med_sched_member {
    struct med_vgpu *v;       /* NULL: the entry is free */
    int d;                    /* the vGPU's device index */
    uint64_t launches;        /* its sched_launches, as last read */
    uint64_t active_ns;       /* when, by the mediator's clock, they last moved */
    uint64_t joined_ns;       /* when it became an entry */
    uint64_t held_ns;         /* when it last held the GPU (or launched into it open); 0: not since it became an entry */
    bool granted;             /* its grant as last written */
    uint64_t queued_seq;      /* its sched_queued_seq, as last read */
    uint64_t queued_at_ns;    /* when, by the mediator's clock, it last moved */
    struct vgpu_sched_demand demand;
};

struct med_sched_gpu {
    bool on;                  /* a vGPU on it has a share below 100% or a cap */
    uint64_t on_ns;           /* when it was last turned on */
    bool overflow_said;       /* more vGPUs than the arbiter has entries (said once) */
    struct vgpu_sched_state s;
    struct med_sched_member m[VGPU_SCHED_MAX_ENTRIES];
};

struct med_sched {
    int timer;                /* a timerfd, armed while some GPU is on */
    bool armed;
    uint64_t beat;            /* the counter written as every on GPU's beat */
    uint64_t tick_ns;         /* when the last tick arbitrated */
    uint64_t gap_ns;          /* when the last tick that came late (MED_SCHED_GAP_NS after the one
                               * before: processes may have stopped waiting for it) arbitrated */
    struct med_sched_gpu gpu[MED_MAX_GPUS];
};

/* Sets s up: 0, or -1 with errno (no timerfd). */
int med_sched_init(struct med_sched *s);

/* Takes the vGPUs as they are now (after a start, a reload, a scan that
 * dropped a retired one): each GPU's members and their shares. */
void med_sched_sync(struct med_sched *s, struct med_vgpus *all, const struct med_gpus *g);

/* The timer fired: one arbitration of every GPU that is on. */
void med_sched_tick(struct med_sched *s);

/* GPU i is arbitrated, and v's device d holds it now (for vgpu-smi). */
bool med_sched_holds(const struct med_sched *s, int i, const struct med_vgpu *v, int d);
/* Whether device d of v may launch beside the holder of GPU i now: the
 * holder leaves the GPU open (docs/design/compute.md), and d's share is no cap. */
bool med_sched_beside(const struct med_sched *s, int i, const struct med_vgpu *v, int d);

/* Ticks further apart than this are a gap in the arbitration (a process
 * lets its launches go after 1 s without a beat). */
#define MED_SCHED_GAP_NS 200000000ull

/*
 * Whether GPU i was arbitrated, with no gap, from since until now
 * (CLOCK_MONOTONIC), and v's device d an entry of it all along; if so,
 * *held_ns is when that entry last held the GPU (0: not in that time).
 */
bool med_sched_arbitrated_since(const struct med_sched *s, int i, const struct med_vgpu *v, int d, uint64_t since,
                                uint64_t *held_ns);
