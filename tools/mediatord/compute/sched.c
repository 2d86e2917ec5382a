/* The mediator's side of the compute share; see sched.h and docs/design/compute.md. */
#define _GNU_SOURCE
#include "tools/mediatord/compute/sched.h"

#include "common/log.h"
#include "common/contract/arbiter/futex.h"

#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define TICK_NS 1000000ull

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct vgpu_bar0_device_status *status_of(const struct med_sched_member *m)
{
    return &m->v->bar->status.device[m->d];
}

static struct vgpu_bar0_device_turn *turn_of(const struct med_sched_member *m)
{
    return &m->v->bar->turn[m->d];
}

int med_sched_init(struct med_sched *s)
{
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < MED_MAX_GPUS; i++)
        vgpu_sched_init(&s->gpu[i].s, 0);
    s->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    return s->timer < 0 ? -1 : 0;
}

static void arm(struct med_sched *s, bool on)
{
    if (on == s->armed)
        return;
    struct itimerspec t = { 0 };
    if (on)
        t.it_value.tv_nsec = t.it_interval.tv_nsec = (long)TICK_NS;
    if (timerfd_settime(s->timer, 0, &t, NULL) == 0)
        s->armed = on;
    else
        vgpu_error("the compute share's timer: %s", strerror(errno));
}

/* The GPU stops being arbitrated: its vGPUs' processes launch freely. */
static void turn_off(struct med_sched_gpu *sg)
{
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
        if (!sg->m[i].v)
            continue;
        struct vgpu_bar0_device_turn *t = turn_of(&sg->m[i]);
        atomic_store(&t->beat, 0);
        atomic_store(&t->grant, 1);
        vgpu_futex_wake_all(&t->grant);
    }
    sg->on = false;
}

static int member_of(const struct med_sched_gpu *sg, const struct med_vgpu *v, int d)
{
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++)
        if (sg->m[i].v == v && sg->m[i].d == d)
            return i;
    return -1;
}

void med_sched_sync(struct med_sched *s, struct med_vgpus *all, const struct med_gpus *g)
{
    uint64_t now = now_ns();
    bool any = false;
    for (int gi = 0; gi < g->n && gi < MED_MAX_GPUS; gi++) {
        struct med_sched_gpu *sg = &s->gpu[gi];
        bool seen[VGPU_SCHED_MAX_ENTRIES] = { false }, want = false;
        for (int k = 0; k < all->n; k++) {
            struct med_vgpu *v = all->v[k];
            for (int d = 0; d < (int)v->regs.device_count && d < VGPU_MAX_DEVICES; d++) {
                if (v->gpu[d] != &g->gpu[gi])
                    continue;
                uint32_t share = v->regs.device[d].compute_share, mode = v->regs.device[d].compute_mode;
                want |= share < 100 || mode == VGPU_COMPUTE_CAP;
                int i = member_of(sg, v, d);
                if (i < 0)
                    for (int j = 0; j < VGPU_SCHED_MAX_ENTRIES && i < 0; j++)
                        if (!sg->m[j].v)
                            i = j;
                if (i < 0) {
                    if (!sg->overflow_said)
                        vgpu_warn("GPU %s has more than %d vGPUs: vGPU %s's device %d is not arbitrated (its "
                                  "processes launch freely)", g->gpu[gi].uuid, VGPU_SCHED_MAX_ENTRIES, v->conf.name, d);
                    sg->overflow_said = true;
                    continue;
                }
                if (!sg->m[i].v) {
                    sg->m[i] = (struct med_sched_member){ .v = v, .d = d, .active_ns = now, .joined_ns = now,
                                                          .launches = atomic_load(&v->bar->status.device[d].sched_launches) };
                    atomic_store(&turn_of(&sg->m[i])->grant, 0);
                }
                vgpu_sched_set(&sg->s, i, share * 10, mode, now);
                seen[i] = true;
            }
        }
        for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++)
            if (sg->m[i].v && !seen[i]) {
                /* Gone (a retired vGPU dropped): its window may be unmapped already. */
                vgpu_sched_drop(&sg->s, i);
                memset(&sg->m[i], 0, sizeof(sg->m[i]));
            }
        if (want && !sg->on)
            vgpu_info("GPU %s: its vGPUs' compute shares are arbitrated", g->gpu[gi].uuid);
        else if (!want && sg->on)
            vgpu_info("GPU %s: no vGPU on it has a compute share any more; its processes launch freely",
                      g->gpu[gi].uuid);
        if (!want && sg->on)
            turn_off(sg);
        if (want && !sg->on) {
            sg->on_ns = now;
            /* Nobody holds it until the first arbitration (turned off, each was let launch). */
            __atomic_store_n(&sg->s.holder, -1, __ATOMIC_RELEASE);
            for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++)
                if (sg->m[i].v) {
                    atomic_store(&turn_of(&sg->m[i])->grant, 0);
                    sg->m[i].granted = false;
                }
        }
        sg->on = want;
        any |= want;
    }
    arm(s, any);
}

/* Member i's demand, from its counters in BAR0 (vgpu_sched_demand). */
static bool demand_of(struct med_sched_gpu *sg, int i, uint64_t now)
{
    struct med_sched_member *m = &sg->m[i];
    struct vgpu_bar0_device_status *st = status_of(m);
    uint64_t launches = atomic_load(&st->sched_launches);
    if (launches != m->launches) {
        m->launches = launches;
        m->active_ns = now;
    }
    uint64_t queued_seq = atomic_load(&st->sched_queued_seq);
    if (queued_seq != m->queued_seq) {
        m->queued_seq = queued_seq;
        m->queued_at_ns = now;
    }
    uint32_t leftovers;
    bool wants = vgpu_sched_demand(&m->demand, i == sg->s.holder, atomic_load(&st->sched_waiting),
                                   atomic_load(&st->sched_running), launches, m->active_ns, now, &leftovers);
    if (leftovers)
        vgpu_info("vGPU %s: %u thread(s) counted waiting for the GPU never launched when it was given: taken for "
                  "leftovers of processes that died waiting, not counted for %.0f s", m->v->conf.name, leftovers,
                  (double)m->demand.floor_ttl_ns / 1e9);
    return wants;
}

/* What member m's processes queued and is still to run: their last
 * estimate, less the time since the mediator saw it made. */
static uint64_t queued_of(const struct med_sched_member *m, uint64_t now)
{
    uint64_t q = atomic_load(&status_of(m)->sched_queued_ns), since = now - m->queued_at_ns;
    return q > since ? q - since : 0;
}

/* Whether the GPU is still certainly behind on member m's queued work
 * (sched_behind_ns, timed as queued_of). */
static bool behind_of(const struct med_sched_member *m, uint64_t now)
{
    return atomic_load(&status_of(m)->sched_behind_ns) > now - m->queued_at_ns;
}

static void arbitrate(struct med_sched *s, struct med_sched_gpu *sg, uint64_t now)
{
    bool demand[VGPU_SCHED_MAX_ENTRIES] = { false }, others = false;
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
        if (!sg->m[i].v)
            continue;
        demand[i] = demand_of(sg, i, now);
        others |= demand[i] && i != sg->s.holder;
    }
    int was = sg->s.holder;
    bool holder_idle = was >= 0 && !demand[was];
    if (vgpu_sched_due(&sg->s, now) || (holder_idle && others)) {
        vgpu_sched_step(&sg->s, now, demand, holder_idle ? sg->m[was].active_ns : 0,
                        was >= 0 ? queued_of(&sg->m[was], now) : 0);
        int now_holder = sg->s.holder;
        if (now_holder != was) {
            if (was >= 0 && sg->m[was].v)
                atomic_store(&turn_of(&sg->m[was])->grant, 0);
            if (now_holder >= 0) {
                struct med_sched_member *m = &sg->m[now_holder];
                vgpu_sched_demand_granted(&m->demand, m->launches, now);
                atomic_store(&turn_of(m)->grant, 1);
                vgpu_futex_wake_all(&turn_of(m)->grant);
            }
            if (vgpu_log_enabled(VGPU_LOG_DEBUG))
                vgpu_debug("compute share: %s -> %s for %.1f ms (busy %.1f ms; %s)",
                           was >= 0 ? sg->m[was].v->conf.name : "nobody",
                           now_holder >= 0 ? sg->m[now_holder].v->conf.name : "nobody",
                           (double)(sg->s.until_ns - now) / 1e6, was >= 0 ? (double)sg->s.e[was].busy_ns / 1e6 : 0.0,
                           was < 0 ? "nobody held it" : holder_idle ? "the holder went idle" : "its quantum ended");
            if (holder_idle && vgpu_log_enabled(VGPU_LOG_DEBUG)) {
                const struct med_sched_member *m = &sg->m[was];
                vgpu_debug("compute share: %s was idle: %u waiting (floor %u), %u running (floor %u), its last "
                           "launch %.1f ms before",
                           m->v->conf.name, atomic_load(&status_of(m)->sched_waiting), m->demand.waiting_floor,
                           atomic_load(&status_of(m)->sched_running), m->demand.running_floor,
                           (double)(now - (m->active_ns < now ? m->active_ns : now)) / 1e6);
            }
        }
    }
    /* Whether the holder leaves the GPU idle: it seldom has work queued or
     * threads waiting for it. */
    int h = sg->s.holder;
    vgpu_sched_sample(&sg->s, now,
                      h >= 0 && (atomic_load(&status_of(&sg->m[h])->sched_running) > sg->m[h].demand.running_floor ||
                                 behind_of(&sg->m[h], now)));
    bool open = vgpu_sched_open(&sg->s);
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
        struct med_sched_member *m = &sg->m[i];
        if (!m->v)
            continue;
        /* Every grant, every tick, not only when the GPU changes hands: a
         * VM writes every byte of its window, and a grant it wrote itself
         * must not outlive the next millisecond. */
        struct vgpu_bar0_device_turn *t = turn_of(m);
        bool grant = i == h || (open && sg->s.e[i].mode != VGPU_COMPUTE_CAP);
        if (grant)
            m->held_ns = now;
        atomic_store(&t->grant, grant);
        if (grant && !m->granted && i != h)
            vgpu_futex_wake_all(&t->grant); /* launching beside the holder: the GPU opened */
        m->granted = grant;
        atomic_store(&status_of(m)->sched_busy_ns, sg->s.e[i].busy_ns);
        atomic_store(&t->beat, s->beat);
    }
}

void med_sched_tick(struct med_sched *s)
{
    uint64_t expirations;
    while (read(s->timer, &expirations, sizeof(expirations)) == (ssize_t)sizeof(expirations))
        ;
    uint64_t now = now_ns();
    if (s->tick_ns && now - s->tick_ns > MED_SCHED_GAP_NS)
        s->gap_ns = now;
    s->tick_ns = now;
    s->beat++;
    for (int gi = 0; gi < MED_MAX_GPUS; gi++)
        if (s->gpu[gi].on)
            arbitrate(s, &s->gpu[gi], now);
}

bool med_sched_holds(const struct med_sched *s, int i, const struct med_vgpu *v, int d)
{
    if (i < 0 || i >= MED_MAX_GPUS || !s->gpu[i].on)
        return false;
    int h = s->gpu[i].s.holder;
    return h >= 0 && s->gpu[i].m[h].v == v && s->gpu[i].m[h].d == d;
}

bool med_sched_beside(const struct med_sched *s, int i, const struct med_vgpu *v, int d)
{
    if (i < 0 || i >= MED_MAX_GPUS || !s->gpu[i].on)
        return false;
    const struct med_sched_gpu *sg = &s->gpu[i];
    int k = member_of(sg, v, d);
    return k >= 0 && k != sg->s.holder && sg->m[k].granted;
}

bool med_sched_arbitrated_since(const struct med_sched *s, int i, const struct med_vgpu *v, int d, uint64_t since,
                                uint64_t *held_ns)
{
    if (i < 0 || i >= MED_MAX_GPUS || !s->gpu[i].on || s->gpu[i].on_ns > since || s->gap_ns > since ||
        now_ns() - s->tick_ns > MED_SCHED_GAP_NS)
        return false;
    const struct med_sched_gpu *sg = &s->gpu[i];
    int k = member_of(sg, v, d);
    if (k < 0 || sg->m[k].joined_ns > since)
        return false;
    *held_ns = sg->m[k].held_ns;
    return true;
}
