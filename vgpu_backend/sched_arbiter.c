/* The compute share's arbiter; see sched_arbiter.h and docs/compute.md. */
#include "vgpu_backend/sched_arbiter.h"

#include "vgpu_backend/settings.h"

#include <string.h>

void vgpu_sched_init(struct vgpu_sched_state *g, uint64_t quantum_ns)
{
    memset(g, 0, sizeof(*g));
    g->holder = -1;
    g->quantum_ns = quantum_ns ? quantum_ns : VGPU_SCHED_QUANTUM_NS;
}

/* The least virtual time of the entries that want the GPU, or of all when none does. */
static uint64_t least_vtime(const struct vgpu_sched_state *g, bool wanting_only)
{
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++)
        if (g->e[i].used && (!wanting_only || g->e[i].wanting || i == g->holder) && g->e[i].vtime < least)
            least = g->e[i].vtime;
    return least == UINT64_MAX ? 0 : least;
}

void vgpu_sched_set(struct vgpu_sched_state *g, int i, uint32_t share, uint32_t mode, uint64_t now)
{
    struct vgpu_sched_entry *e = &g->e[i];
    if (!e->used) {
        memset(e, 0, sizeof(*e));
        e->vtime = least_vtime(g, false);
        e->refilled_ns = now;
        e->budget_ns = (int64_t)g->quantum_ns;
        e->used = 1;
    }
    e->share = share < 1 ? 1 : share > 1000 ? 1000 : share;
    e->mode = mode;
}

void vgpu_sched_drop(struct vgpu_sched_state *g, int i)
{
    memset(&g->e[i], 0, sizeof(g->e[i]));
    if (g->holder == i)
        g->holder = -1;
}

/* Charges the holder for its time since it was last charged, to now (or to
 * when it went idle, if earlier). */
static void charge(struct vgpu_sched_state *g, uint64_t now, uint64_t idle_since)
{
    if (g->holder < 0)
        return;
    struct vgpu_sched_entry *e = &g->e[g->holder];
    uint64_t end = idle_since && idle_since < now ? idle_since : now;
    uint64_t t = end > g->granted_ns ? end - g->granted_ns : 0;
    e->busy_ns += t;
    e->vtime += t * 1000 / e->share;
    e->budget_ns -= (int64_t)t;
    g->granted_ns = now;
}

/* Cap mode: the budget refills at the share of wall time, at most a quantum ahead. */
static void refill(struct vgpu_sched_state *g, uint64_t now)
{
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
        struct vgpu_sched_entry *e = &g->e[i];
        if (!e->used || e->mode != VGPU_COMPUTE_CAP)
            continue;
        if (now > e->refilled_ns)
            e->budget_ns += (int64_t)((now - e->refilled_ns) * e->share / 1000);
        e->refilled_ns = now;
        if (e->budget_ns > (int64_t)g->quantum_ns)
            e->budget_ns = (int64_t)g->quantum_ns;
    }
}

/* When entry e will have budget again (cap mode). */
static uint64_t refilled_at(const struct vgpu_sched_entry *e, uint64_t now)
{
    if (e->budget_ns > 0)
        return now;
    return now + ((uint64_t)-e->budget_ns * 1000 + e->share - 1) / e->share + 1;
}

bool vgpu_sched_step(struct vgpu_sched_state *g, uint64_t now, const bool *demand, uint64_t holder_idle_since)
{
    charge(g, now, holder_idle_since);
    refill(g, now);
    /* Coming back from an idle spell: level with those that kept wanting it. */
    uint64_t floor = least_vtime(g, true);
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
        struct vgpu_sched_entry *e = &g->e[i];
        if (!e->used)
            continue;
        if (demand[i] && !e->wanting && i != g->holder && e->vtime < floor)
            e->vtime = floor;
        e->wanting = demand[i];
    }
    int best = -1;
    uint64_t wake = UINT64_MAX;
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
        const struct vgpu_sched_entry *e = &g->e[i];
        if (!e->used || !demand[i])
            continue;
        if (e->mode == VGPU_COMPUTE_CAP && e->budget_ns <= 0) {
            uint64_t at = refilled_at(e, now);
            wake = at < wake ? at : wake;
            continue;
        }
        if (best < 0 || e->vtime < g->e[best].vtime || (e->vtime == g->e[best].vtime && i == g->holder))
            best = i;
    }
    bool changed = best != g->holder;
    g->holder = best;
    g->granted_ns = now;
    if (best < 0) {
        g->until_ns = wake == UINT64_MAX ? now + g->quantum_ns : wake;
        return changed;
    }
    uint64_t q = g->quantum_ns;
    const struct vgpu_sched_entry *e = &g->e[best];
    if (e->mode == VGPU_COMPUTE_CAP && (uint64_t)e->budget_ns < q)
        q = (uint64_t)e->budget_ns;
    g->until_ns = now + q;
    return changed;
}
