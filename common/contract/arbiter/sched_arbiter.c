/* The compute share's arbiter; see sched_arbiter.h and docs/design/compute.md. */
#include "common/contract/arbiter/sched_arbiter.h"

#include "common/contract/settings/settings.h"

#include <string.h>

void vgpu_sched_init(struct vgpu_sched_state *g, uint64_t quantum_ns)
{
    memset(g, 0, sizeof(*g));
    g->holder = -1;
    g->quantum_ns = quantum_ns ? quantum_ns : VGPU_SCHED_QUANTUM_NS;
}

/* The floor of virtual time: the least of the entries that want the GPU
 * (or hold it), kept when none does, and never moved back. */
static uint64_t raise_floor(struct vgpu_sched_state *g)
{
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++)
        if (g->e[i].used && (g->e[i].wanting || i == g->holder) && g->e[i].vtime < least)
            least = g->e[i].vtime;
    if (least != UINT64_MAX && least > g->min_vtime)
        g->min_vtime = least;
    return g->min_vtime;
}

/* Cap mode: the budget refills at the share of wall time, up to two
 * quanta: one to be given, and one to keep while it waits its turn behind
 * others (it must not lose its refill for being second in line). */
static void refill_entry(struct vgpu_sched_entry *e, uint64_t quantum, uint64_t now)
{
    if (now > e->refilled_ns)
        e->budget_ns += (int64_t)((now - e->refilled_ns) * e->share / 1000);
    e->refilled_ns = now;
    if (e->budget_ns > 2 * (int64_t)quantum)
        e->budget_ns = 2 * (int64_t)quantum;
}

static void refill(struct vgpu_sched_state *g, uint64_t now)
{
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++)
        if (g->e[i].used && g->e[i].mode == VGPU_COMPUTE_CAP)
            refill_entry(&g->e[i], g->quantum_ns, now);
}

void vgpu_sched_set(struct vgpu_sched_state *g, int i, uint32_t share, uint32_t mode, uint64_t now)
{
    struct vgpu_sched_entry *e = &g->e[i];
    share = share < 1 ? 1 : share > 1000 ? 1000 : share;
    if (!e->used) {
        memset(e, 0, sizeof(*e));
        e->vtime = raise_floor(g); /* level with the least of those that want it */
        e->used = 1;
    } else if (mode == VGPU_COMPUTE_CAP && e->mode == VGPU_COMPUTE_CAP) {
        /* The cap changed, or not: what it earned so far, at the rate it had. */
        refill_entry(e, g->quantum_ns, now);
        e->share = share;
        return;
    } else if (mode == e->mode) {
        e->share = share;
        return;
    }
    /* A new entry, or one that becomes a cap (a reload, a process with
     * other settings) or stops being one: a cap starts with a quantum, and
     * refills from now. */
    e->refilled_ns = now;
    e->budget_ns = (int64_t)g->quantum_ns;
    e->share = share;
    e->mode = mode;
}

void vgpu_sched_drop(struct vgpu_sched_state *g, int i)
{
    memset(&g->e[i], 0, sizeof(g->e[i]));
    if (g->holder == i)
        __atomic_store_n(&g->holder, -1, __ATOMIC_RELEASE);
}

/* Charges the holder for its time since it was last charged, to now (or to
 * when it went idle, if earlier), and extra_ns more (its queued work, when
 * it loses the GPU). */
static void charge(struct vgpu_sched_state *g, uint64_t now, uint64_t idle_since, uint64_t extra_ns)
{
    if (g->holder < 0)
        return;
    struct vgpu_sched_entry *e = &g->e[g->holder];
    uint64_t end = idle_since && idle_since < now ? idle_since : now;
    uint64_t t = (end > g->granted_ns ? end - g->granted_ns : 0) + extra_ns;
    __atomic_fetch_add(&e->busy_ns, t, __ATOMIC_RELAXED); /* shown without the lock */
    e->vtime += t * 1000 / e->share;
    if (e->mode == VGPU_COMPUTE_CAP) /* a share runs up no debt for a cap set later to owe */
        e->budget_ns -= (int64_t)t;
    g->granted_ns = now;
}

/* When entry e will have a quantum's budget again (cap mode). */
static uint64_t refilled_at(const struct vgpu_sched_entry *e, uint64_t quantum, uint64_t now)
{
    if (e->budget_ns >= (int64_t)quantum)
        return now;
    uint64_t need = (uint64_t)((int64_t)quantum - e->budget_ns);
    return now + (need * 1000 + e->share - 1) / e->share + 1;
}

/* Open while the holder's fill is low.  A cap holder's idle time is open
 * too: the cap bounds its own time, not the others'. */
static bool publish_open(struct vgpu_sched_state *g)
{
    uint32_t open = g->holder >= 0 && g->e[g->holder].fill < VGPU_SCHED_OPEN_BELOW;
    bool changed = open != g->open;
    __atomic_store_n(&g->open, open, __ATOMIC_RELEASE);
    return changed;
}

bool vgpu_sched_sample(struct vgpu_sched_state *g, uint64_t now, bool waits_for_gpu)
{
    if (g->holder >= 0) {
        struct vgpu_sched_entry *e = &g->e[g->holder];
        /* Weighted by the time since the last sample, at most a quarter:
         * samples come about once a millisecond, unevenly (standalone,
         * when processes launch or wait), and no one of them decides. */
        uint64_t dt = now > e->sampled_ns ? now - e->sampled_ns : 0;
        if (dt > VGPU_SCHED_FILL_NS / 4)
            dt = VGPU_SCHED_FILL_NS / 4;
        int64_t x = waits_for_gpu ? 1000 : 0;
        e->fill = (uint32_t)((int64_t)e->fill + (x - (int64_t)e->fill) * (int64_t)dt / (int64_t)VGPU_SCHED_FILL_NS);
        e->sampled_ns = now;
    }
    return publish_open(g);
}

bool vgpu_sched_step(struct vgpu_sched_state *g, uint64_t now, const bool *demand, uint64_t holder_idle_since,
                     uint64_t holder_queued_ns)
{
    int was = g->holder;
    charge(g, now, holder_idle_since, 0);
    refill(g, now);
    /* Coming back from an idle spell: no more than a quantum behind the
     * floor, the least virtual time of those that wanted it (kept while
     * nobody does: a vGPU that used an idle GPU alone must not then wait
     * for a newcomer to catch up with it).  A pause shorter than two quanta
     * is not one: a framework stops for a few milliseconds at every
     * synchronize, and a tenant held back at each would drift towards an
     * equal split. */
    uint64_t floor = raise_floor(g);
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
        struct vgpu_sched_entry *e = &g->e[i];
        if (!e->used)
            continue;
        uint64_t credit = g->quantum_ns * 1000 / e->share;
        bool back = demand[i] && !e->wanting && i != g->holder && now - e->quiet_ns >= 2 * g->quantum_ns;
        if (back && e->vtime + credit < floor)
            e->vtime = floor - credit;
        if (e->wanting && !demand[i])
            e->quiet_ns = now;
        e->wanting = demand[i];
    }
    int best = -1;
    uint64_t wake = UINT64_MAX;
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
        const struct vgpu_sched_entry *e = &g->e[i];
        if (!e->used || !demand[i])
            continue;
        /* A cap runs in whole quanta: slivers of budget, each ending in a
         * drain of queued work that nobody is charged for, would add up. */
        if (e->mode == VGPU_COMPUTE_CAP && e->budget_ns < (int64_t)g->quantum_ns) {
            uint64_t at = refilled_at(e, g->quantum_ns, now);
            wake = at < wake ? at : wake;
            continue;
        }
        if (best < 0 || e->vtime < g->e[best].vtime || (e->vtime == g->e[best].vtime && i == g->holder))
            best = i;
    }
    bool changed = best != g->holder;
    g->granted_ns = now;
    if (changed && was >= 0 && holder_queued_ns) {
        /* What the old holder queued runs on into the next turn: its time,
         * not the next holder's (a graph of 10 ms launched at the end of a
         * turn is 10 ms of the next one). */
        uint64_t drain = holder_queued_ns < g->quantum_ns ? holder_queued_ns : g->quantum_ns;
        charge(g, now, 0, drain);
        g->granted_ns = now + drain;
    }
    if (changed && best >= 0)
        g->e[best].sampled_ns = now; /* its fill is of its holding time: the time between its turns weighs nothing */
    uint64_t until;
    if (best < 0) {
        until = wake == UINT64_MAX ? now + g->quantum_ns : wake;
    } else {
        until = now + g->quantum_ns;
    }
    /* Read without the lock by the processes (vgpu_sched_holder/_until):
     * the end first, so a new holder never sees the old one's. */
    __atomic_store_n(&g->until_ns, until, __ATOMIC_RELEASE);
    __atomic_store_n(&g->holder, best, __ATOMIC_RELEASE);
    publish_open(g);
    return changed;
}

bool vgpu_sched_demand(struct vgpu_sched_demand *d, bool holder, uint32_t waiting, uint32_t running,
                       uint64_t launches, uint64_t launched_ns, uint64_t now, uint32_t *leftovers)
{
    *leftovers = 0;
    if (launches != d->launches_seen) { /* the entry launches: whatever was floored before was not it */
        d->launches_seen = launches;
        d->floor_ttl_ns = 0;
    }
    if ((d->waiting_floor || d->running_floor) && now >= d->floor_until_ns)
        d->waiting_floor = d->running_floor = 0; /* count them again: one may be alive */
    if (waiting < d->waiting_floor)
        d->waiting_floor = waiting;
    if (running < d->running_floor)
        d->running_floor = running;
    bool counted = waiting > d->waiting_floor || (holder && running > d->running_floor);
    if (holder && counted && launches == d->launches_at_grant && now > d->granted_ns &&
        now - d->granted_ns > VGPU_SCHED_DEAD_WAITERS_NS) {
        *leftovers = waiting - d->waiting_floor + (running > d->running_floor ? running - d->running_floor : 0);
        d->waiting_floor = waiting;
        d->running_floor = running;
        d->floor_ttl_ns = !d->floor_ttl_ns ? VGPU_SCHED_FLOOR_TTL_NS
                          : d->floor_ttl_ns >= VGPU_SCHED_FLOOR_TTL_MAX_NS / 2 ? VGPU_SCHED_FLOOR_TTL_MAX_NS
                                                                               : 2 * d->floor_ttl_ns;
        d->floor_until_ns = now + d->floor_ttl_ns;
        counted = false;
    }
    return counted || launched_ns >= now || now - launched_ns < VGPU_SCHED_IDLE_NS;
}
