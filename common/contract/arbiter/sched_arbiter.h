/*
 * The compute share's arbiter (docs/design/compute.md): who holds a GPU for the
 * next quantum.  Pure: state in, state out, time given, so that the
 * mediator (for its vGPUs, tools/mediatord/compute/sched.c) and standalone
 * processes (over a file they share, sched_page.c) run the same rules, and
 * a simulation can test them (test/compute/sched_arbiter_test.c).
 *
 * A GPU time-slices between the contexts of different processes, so the
 * vGPU whose processes may launch is the one that gets the GPU.  The
 * arbiter gives it, a quantum at a time, to the entry with demand that is
 * furthest behind its share: each entry's virtual time advances by the
 * GPU time charged to it divided by its share.  An entry that comes back
 * after an idle spell (two quanta or more: not a framework's pause at a
 * synchronize), or a new one, is at most a quantum behind the least
 * virtual time of those that wanted the GPU, a floor that never moves back
 * (as CFS keeps min_vruntime): it is not owed what it did not use, even
 * when nobody wanted the GPU as it came back, and an entry that used an
 * idle GPU alone is not made to wait while a newcomer catches up.  An entry in cap mode also holds a budget that refills at its
 * share of wall time, up to two quanta: it is given the GPU only with a
 * whole quantum of budget, so it runs in whole quanta, and without one it
 * is not given the GPU, even an idle one.  Nobody else wanting the GPU, the holder
 * keeps it (work conservation); and a holder that leaves the GPU idle (it
 * seldom has work queued or threads waiting for it) opens it to the entries
 * in share mode, which launch beside it, uncharged.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define VGPU_SCHED_MAX_ENTRIES 32
#define VGPU_SCHED_QUANTUM_NS 50000000ull /* 50 ms: long against a switch and a drain */
/* A holder that launched nothing for this long has no demand: its queued
 * work (at most VGPU_SCHED_QUEUE_NS, inflight.c) is done by then. */
#define VGPU_SCHED_IDLE_NS 2000000ull
/* Waiters of a vGPU given the GPU launch within microseconds: waiting still
 * counted this long after a grant, with no launch, is the leftover of a
 * process that died waiting, and is no demand. */
#define VGPU_SCHED_DEAD_WAITERS_NS 20000000ull
/* The holder's fill, how much of the time the GPU has its work to run (its
 * threads wait for their own queued work, a synchronize or the queue bound,
 * or its estimate says some is still queued), is averaged over about this
 * long.  A vGPU that keeps the GPU busy has work there most of the time;
 * one that leaves it idle (a host-bound loop, a notebook, a small model)
 * seldom does. */
#define VGPU_SCHED_FILL_NS 10000000ull
/* While the holder's fill is below this (permille), the GPU is open: the
 * entries in share mode may launch beside the holder (work conservation in
 * the GPU's terms: a holder that leaves the GPU idle does not keep it from
 * the others). */
#define VGPU_SCHED_OPEN_BELOW 500

struct vgpu_sched_entry {
    uint32_t used;          /* the slot is an entry */
    uint32_t share;         /* permille of the GPU, 1-1000 */
    uint32_t mode;          /* enum vgpu_compute_mode */
    uint32_t wanting;       /* had demand at the last step (for the catch-up rule) */
    uint64_t quiet_ns;      /* when it last stopped wanting the GPU */
    uint64_t vtime;         /* GPU time charged, in ns, times 1000 / share */
    uint64_t busy_ns;       /* GPU time charged, in all */
    int64_t budget_ns;      /* cap mode: GPU time it may still use */
    uint64_t refilled_ns;   /* cap mode: when the budget was last refilled */
    uint32_t fill;          /* permille of its holding time the GPU had its work to run */
    uint32_t reserved;
    uint64_t sampled_ns;    /* when its fill was last sampled */
};

struct vgpu_sched_state {
    int32_t holder;          /* the entry holding the GPU, or -1 */
    uint32_t open;           /* the holder leaves the GPU idle: entries in share mode may launch too */
    uint64_t granted_ns;     /* when the holder was given it (or last charged) */
    uint64_t until_ns;       /* the holder's quantum ends; with no holder, when to look again */
    uint64_t quantum_ns;
    uint64_t min_vtime;      /* the least virtual time of the entries that wanted the GPU, never lower */
    struct vgpu_sched_entry e[VGPU_SCHED_MAX_ENTRIES];
};

/* An empty state with the given quantum (0: the default). */
void vgpu_sched_init(struct vgpu_sched_state *g, uint64_t quantum_ns);

/* Sets entry i (share in permille, mode); a new entry starts level with the others. */
void vgpu_sched_set(struct vgpu_sched_state *g, int i, uint32_t share, uint32_t mode, uint64_t now);

/* Entry i is gone. */
void vgpu_sched_drop(struct vgpu_sched_state *g, int i);

/*
 * One step at time now.  demand[i]: entry i has work waiting for the GPU
 * (or, for the holder, launched lately); holder_idle_since: when the holder
 * last launched, so that it is charged no time it did not use (0: it is
 * busy); holder_queued_ns: the GPU time of the work the holder queued that
 * is still to run (its processes' estimate).  Charges the holder, refills
 * the budgets, and picks the holder of the next quantum; when that is
 * another, the old one is charged for its queued work too (at most a
 * quantum), and the new one is charged from when that work is done.
 * Returns true when the holder changed.
 */
bool vgpu_sched_step(struct vgpu_sched_state *g, uint64_t now, const bool *demand, uint64_t holder_idle_since,
                     uint64_t holder_queued_ns);

/*
 * A sample of the holder's fill at now: whether the GPU has its work to run
 * (its threads wait for it, or it has some queued; a stepper that looks
 * about once a millisecond).
 * Sets open.  Returns true when open changed.
 */
bool vgpu_sched_sample(struct vgpu_sched_state *g, uint64_t now, bool waits_for_gpu);

/* Whether entries in share mode may launch beside the holder now (read
 * without the lock). */
static inline bool vgpu_sched_open(const struct vgpu_sched_state *g)
{
    return __atomic_load_n(&g->open, __ATOMIC_ACQUIRE) != 0;
}

/* Whether a step is due at now: the quantum is over, or there is no holder. */
static inline bool vgpu_sched_due(const struct vgpu_sched_state *g, uint64_t now)
{
    return g->holder < 0 || now >= g->until_ns;
}

/*
 * Reading an entry's demand from what its processes count (the same for
 * the mediator, from BAR0, and the standalone page): threads waiting for
 * the GPU; threads waiting for their own queued work (the holder's demand:
 * it is busy on the GPU though it launches nothing); launches, a counter
 * that moves while they launch, and when the stepper last saw it move (an
 * entry that launched lately wants the GPU, holder or not: one that is not
 * launched into an open GPU).
 * A process killed while it waited leaves its counts behind: counts that
 * stay VGPU_SCHED_DEAD_WAITERS_NS into a grant with no launch are
 * leftovers, and from then on only counts above them are demand.
 */
/* Leftover counts are only presumed dead: a live thread that a loaded
 * machine kept off the CPU for VGPU_SCHED_DEAD_WAITERS_NS looks the same.
 * So a floor is taken back after a while, and the entry's waiters count
 * again: a live one is given the GPU and launches; dead ones are found
 * again, and their floor then holds twice as long, up to the most. */
#define VGPU_SCHED_FLOOR_TTL_NS 1000000000ull       /* 1 s at first */
#define VGPU_SCHED_FLOOR_TTL_MAX_NS 64000000000ull  /* 64 s at most */

/* A thread's count taken back from a waiting or running counter, never
 * below zero: the standalone page clears an entry's counts when its slot is
 * taken anew, and a thread that counted itself in the slot's earlier taking
 * must not wrap the new one's count round to four billion threads. */
static inline void vgpu_sched_count_leave(_Atomic uint32_t *count)
{
    uint32_t n = atomic_load_explicit(count, memory_order_relaxed);
    while (n && !atomic_compare_exchange_weak_explicit(count, &n, n - 1, memory_order_release, memory_order_relaxed))
        ;
}

struct vgpu_sched_demand {
    uint32_t waiting_floor, running_floor; /* leftovers */
    uint64_t granted_ns;                   /* when the entry was last given the GPU */
    uint64_t launches_at_grant;
    uint64_t floor_until_ns;               /* the floors are taken back then */
    uint64_t floor_ttl_ns;                 /* how long the last floor held (0: none since a launch) */
    uint64_t launches_seen;                /* the launches counter at the last look */
};

/* Entry's demand now; *leftovers: how many counts it just took for
 * leftovers (0 mostly), for the stepper to log. */
bool vgpu_sched_demand(struct vgpu_sched_demand *d, bool holder, uint32_t waiting, uint32_t running,
                       uint64_t launches, uint64_t launched_ns, uint64_t now, uint32_t *leftovers);

/* The entry was just given the GPU. */
static inline void vgpu_sched_demand_granted(struct vgpu_sched_demand *d, uint64_t launches, uint64_t now)
{
    d->granted_ns = now;
    d->launches_at_grant = launches;
}

/* The holder and its quantum's end, for readers outside the state's lock
 * (the steps store them atomically). */
static inline int32_t vgpu_sched_holder(const struct vgpu_sched_state *g)
{
    return __atomic_load_n(&g->holder, __ATOMIC_ACQUIRE);
}

static inline uint64_t vgpu_sched_until(const struct vgpu_sched_state *g)
{
    return __atomic_load_n(&g->until_ns, __ATOMIC_ACQUIRE);
}
