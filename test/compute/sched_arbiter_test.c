/*
 * The compute share's arbiter (common/contract/arbiter/sched_arbiter.c) in simulated
 * time: entries that want the GPU from some moment on, a GPU that gives it
 * to the holder alone, steps at each quantum's end.  Each scenario checks
 * the shares a user would measure.  `sched_arbiter_test SCENARIO`.
 */
#include "common/contract/arbiter/sched_arbiter.h"
#include "common/contract/settings/settings.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull
#define S 1000000000ull

static int failures;

#define CHECK(cond, ...)                                  \
    do {                                                  \
        if (!(cond)) {                                    \
            fprintf(stderr, "FAIL line %d: ", __LINE__); \
            fprintf(stderr, __VA_ARGS__);                 \
            fprintf(stderr, "\n");                        \
            failures++;                                   \
        }                                                 \
    } while (0)

struct tenant {
    uint32_t share; /* permille */
    uint32_t mode;
    uint64_t from, to; /* wants the GPU in [from, to) */
    uint64_t from2, to2; /* and again in [from2, to2) (0, 0: no second spell) */
    uint64_t pause;    /* but for this long at the start of every 250 ms (a framework's synchronize) */
    uint64_t got;      /* GPU time it had in the measured window */
};

/*
 * Runs n tenants from time 0 to end, stepping the arbiter whenever a step
 * is due (or a tenant's demand changes), in 100 us ticks; measures the GPU
 * time each had in [measure_from, end).
 */
static void run(struct tenant *t, int n, uint64_t end, uint64_t measure_from)
{
    struct vgpu_sched_state g;
    vgpu_sched_init(&g, 0);
    for (int i = 0; i < n; i++)
        vgpu_sched_set(&g, i, t[i].share, t[i].mode, 0);
    bool demand[VGPU_SCHED_MAX_ENTRIES] = { false }, was[VGPU_SCHED_MAX_ENTRIES] = { false };
    const uint64_t tick = 100000;
    for (uint64_t now = 0; now < end; now += tick) {
        bool changed = false;
        for (int i = 0; i < n; i++) {
            demand[i] = (now >= t[i].from && now < t[i].to && (now - t[i].from) % (250 * MS) >= t[i].pause) ||
                        (now >= t[i].from2 && now < t[i].to2);
            changed |= demand[i] != was[i];
            was[i] = demand[i];
        }
        /* A holder whose demand ended went idle at this tick. */
        uint64_t idle = g.holder >= 0 && !demand[g.holder] ? now : 0;
        if (vgpu_sched_due(&g, now) || changed)
            vgpu_sched_step(&g, now, demand, idle, 0);
        if (g.holder >= 0 && demand[g.holder] && now >= measure_from)
            t[g.holder].got += tick;
    }
}

static double pct(uint64_t got, uint64_t window)
{
    return 100.0 * (double)got / (double)window;
}

static void expect_share(const struct tenant *t, uint64_t window, double want, double tol, const char *what)
{
    double p = pct(t->got, window);
    CHECK(p >= want - tol && p <= want + tol, "%s: %.1f%% of the GPU, want %.0f%% +- %.0f", what, p, want, tol);
}

static void lone_cap(void)
{
    for (uint32_t share = 100; share <= 900; share += 200) {
        struct tenant t = { .share = share, .mode = VGPU_COMPUTE_CAP, .to = 20 * S };
        run(&t, 1, 20 * S, 2 * S);
        char what[64];
        snprintf(what, sizeof(what), "a lone tenant capped at %u%%", share / 10);
        expect_share(&t, 18 * S, share / 10.0, 1, what);
    }
}

static void lone_share(void)
{
    struct tenant t = { .share = 300, .mode = VGPU_COMPUTE_SHARE_MODE, .to = 10 * S };
    run(&t, 1, 10 * S, 0);
    expect_share(&t, 10 * S, 100, 0.5, "a lone tenant with a 30% share (work-conserving)");
}

static void two_tenants(void)
{
    struct tenant t[2] = { { .share = 250, .to = 20 * S }, { .share = 750, .to = 20 * S } };
    run(t, 2, 20 * S, 2 * S);
    expect_share(&t[0], 18 * S, 25, 1, "the 25% tenant of two");
    expect_share(&t[1], 18 * S, 75, 1, "the 75% tenant of two");
}

/* Tenants that pause briefly now and then (a synchronize every 250 ms)
 * are not tenants back from idling: they keep their shares. */
static void brief_pauses(void)
{
    struct tenant t[2] = { { .share = 250, .to = 20 * S, .pause = 3 * MS },
                           { .share = 750, .from = 100 * MS, .to = 20 * S, .pause = 3 * MS } };
    run(t, 2, 20 * S, 2 * S);
    expect_share(&t[0], 18 * S, 25, 2, "the 25% tenant of two that pause 3 ms every 250 ms");
    expect_share(&t[1], 18 * S, 75, 2, "the 75% tenant of two that pause 3 ms every 250 ms");
}

static void four_tenants(void)
{
    struct tenant t[4] = { { .share = 100, .to = 30 * S }, { .share = 200, .to = 30 * S },
                           { .share = 300, .to = 30 * S }, { .share = 400, .to = 30 * S } };
    run(t, 4, 30 * S, 2 * S);
    for (int i = 0; i < 4; i++) {
        char what[64];
        snprintf(what, sizeof(what), "the %u%% tenant of four", t[i].share / 10);
        expect_share(&t[i], 28 * S, t[i].share / 10.0, 1, what);
    }
}

/* A cap holds beside a work-conserving share; the capped one alone leaves the rest idle. */
static void cap_beside_share(void)
{
    struct tenant t[2] = { { .share = 300, .mode = VGPU_COMPUTE_CAP, .to = 20 * S },
                           { .share = 700, .from = 0, .to = 10 * S } };
    run(t, 2, 20 * S, 1 * S);
    /* [1 s, 10 s): both want it; [10 s, 20 s): the capped one alone. */
    struct tenant a[2] = { { .share = 300, .mode = VGPU_COMPUTE_CAP, .to = 10 * S }, { .share = 700, .to = 10 * S } };
    run(a, 2, 10 * S, 1 * S);
    expect_share(&a[0], 9 * S, 30, 1, "a 30% cap beside a 70% share");
    expect_share(&a[1], 9 * S, 70, 1, "a 70% share beside a 30% cap");
    struct tenant b = { .share = 300, .mode = VGPU_COMPUTE_CAP, .to = 10 * S };
    run(&b, 1, 10 * S, 1 * S);
    expect_share(&b, 9 * S, 30, 1, "a 30% cap alone, the GPU otherwise idle");
}

/* A second tenant starts: within a second both have their shares. */
static void convergence(void)
{
    struct tenant t[2] = { { .share = 500, .to = 20 * S }, { .share = 500, .from = 5 * S, .to = 20 * S } };
    run(t, 2, 6 * S, 5 * S);
    expect_share(&t[0], 1 * S, 50, 3, "the first tenant, in the second after the second one started");
    expect_share(&t[1], 1 * S, 50, 3, "the second tenant, in its first second");
}

/* Idle for 10 s, a tenant comes back level with the other, not owed 10 s. */
static void no_catch_up(void)
{
    struct tenant t[2] = { { .share = 500, .to = 30 * S }, { .share = 500, .from = 10 * S, .to = 30 * S } };
    run(t, 2, 11 * S, 10 * S);
    expect_share(&t[0], 1 * S, 50, 3, "the tenant that kept working, the second after the other came back");
    expect_share(&t[1], 1 * S, 50, 3, "the tenant back from 10 s idle");
}

/*
 * A tenant that used an idle GPU alone, then met a newcomer: the 25% one
 * runs alone for `alone` and stops; the 75% one starts 200 ms later, with
 * nobody wanting the GPU meanwhile; the 25% one starts again a second after
 * that.  It gets its share within a second, never below half of
 * it after that first second: the newcomer starts level with what the lone
 * tenant did, not at 0 (which kept the lone tenant waiting about three
 * times as long as it had run alone, at 0.3% of the GPU).
 */
static void newcomer_after_a_lone_run_check(uint64_t alone)
{
    uint64_t newcomer = alone + 200 * MS, back = newcomer + S;
    struct tenant t[2] = { { .share = 250, .to = alone, .from2 = back, .to2 = back + 7 * S },
                           { .share = 750, .from = newcomer, .to = back + 7 * S } };
    char what[96];
    for (int second = 1; second < 7; second++) {
        t[0].got = t[1].got = 0;
        run(t, 2, back + (uint64_t)(second + 1) * S, back + (uint64_t)second * S);
        snprintf(what, sizeof(what), "the 25%% tenant back after %.0f s alone, in its second %d back", (double)alone / S,
                 second + 1);
        double p = pct(t[0].got, S);
        CHECK(p >= 12.5, "%s: %.1f%% of the GPU, want at least half its share", what, p);
    }
    t[0].got = t[1].got = 0;
    run(t, 2, back + 7 * S, back + S);
    snprintf(what, sizeof(what), "the 25%% tenant back after %.0f s alone, from its second second on", (double)alone / S);
    expect_share(&t[0], 6 * S, 25, 3, what);
}

static void newcomer_after_a_lone_run(void)
{
    newcomer_after_a_lone_run_check(6 * S);
    newcomer_after_a_lone_run_check(60 * S);
}

/* A capped tenant idle for 5 s banks no more than two quanta: in its first
 * second back it gets its cap and at most one quantum more (40 ms: 4
 * points), not a burst of what it did not use. */
static void cap_no_burst(void)
{
    struct tenant t = { .share = 300, .mode = VGPU_COMPUTE_CAP, .from = 5 * S, .to = 20 * S };
    run(&t, 1, 6 * S, 5 * S);
    expect_share(&t, 1 * S, 32, 3, "a 30% cap, in its first second after 5 s idle");
}

/* A capped tenant runs in whole quanta, not in slivers as its budget
 * trickles back: each grant lasts a quantum (queued work drained at a
 * switch would otherwise outweigh the slivers), and there are few. */
static void cap_in_whole_quanta(void)
{
    struct vgpu_sched_state g;
    vgpu_sched_init(&g, 0);
    vgpu_sched_set(&g, 0, 300, VGPU_COMPUTE_CAP, 0);
    bool demand[VGPU_SCHED_MAX_ENTRIES] = { true };
    int grants = 0;
    uint64_t shortest = UINT64_MAX;
    for (uint64_t now = 0; now < 10 * S; now += 100000) {
        if (!vgpu_sched_due(&g, now))
            continue;
        int was = g.holder;
        vgpu_sched_step(&g, now, demand, 0, 0);
        if (g.holder == 0 && was != 0) {
            grants++;
            shortest = g.until_ns - now < shortest ? g.until_ns - now : shortest;
        }
    }
    int want = (int)(10 * S * 3 / 10 / VGPU_SCHED_QUANTUM_NS);
    CHECK(grants >= want * 2 / 3 && grants <= want * 4 / 3, "%d grants in 10 s at 30%% in %.0f ms quanta, want about %d",
          grants, (double)VGPU_SCHED_QUANTUM_NS / 1e6, want);
    CHECK(shortest >= VGPU_SCHED_QUANTUM_NS, "a grant of %.2f ms, shorter than a quantum", (double)shortest / 1e6);
}

/* A vGPU set anew while it runs (the mediator's reload, a standalone vGPU's
 * next process with other settings): each setting holds from then on.  A
 * work-conserving share runs up no debt that a cap turned on later would
 * owe (a share turned into a 10% cap after 10 s was owed 100 s and given
 * nothing, on the H100 under vgpu-mediatord), and a cap raised or lowered
 * refills at its new rate from then. */
static void reconfigured(void)
{
    static const struct {
        uint32_t share, mode;
        double want; /* percent of the GPU over the phase's last 9 s */
    } phase[] = {
        { 300, VGPU_COMPUTE_SHARE_MODE, 100 }, { 300, VGPU_COMPUTE_CAP, 30 }, { 300, VGPU_COMPUTE_SHARE_MODE, 100 },
        { 100, VGPU_COMPUTE_CAP, 10 },         { 500, VGPU_COMPUTE_CAP, 50 },  { 200, VGPU_COMPUTE_CAP, 20 },
        { 900, VGPU_COMPUTE_CAP, 90 },         { 900, VGPU_COMPUTE_SHARE_MODE, 100 },
    };
    struct vgpu_sched_state g;
    vgpu_sched_init(&g, 0);
    bool demand[VGPU_SCHED_MAX_ENTRIES] = { true };
    const uint64_t tick = 100000;
    uint64_t now = 0;
    for (size_t p = 0; p < sizeof(phase) / sizeof(*phase); p++) {
        vgpu_sched_set(&g, 0, phase[p].share, phase[p].mode, now);
        vgpu_sched_step(&g, now, demand, 0, 0); /* as the mediator's next tick does */
        uint64_t got = 0, end = now + 10 * S;
        for (; now < end; now += tick) {
            if (vgpu_sched_due(&g, now))
                vgpu_sched_step(&g, now, demand, 0, 0);
            if (g.holder == 0 && end - now <= 9 * S)
                got += tick;
        }
        double pc = pct(got, 9 * S);
        CHECK(pc >= phase[p].want - 1.5 && pc <= phase[p].want + 1.5,
              "phase %zu (%u%% %s, set while it ran): %.1f%% of the GPU, want %.0f%%", p + 1, phase[p].share / 10,
              phase[p].mode == VGPU_COMPUTE_CAP ? "cap" : "share", pc, phase[p].want);
    }
}

/* A holder that goes idle is charged only the time it used; the other gets the rest. */
static void idle_holder(void)
{
    struct tenant t[2] = { { .share = 500, .to = 10 * S }, { .share = 500, .from = 0, .to = 10 * S } };
    t[0].to = 3 * S;
    run(t, 2, 10 * S, 3 * S);
    expect_share(&t[1], 7 * S, 100, 1, "the tenant left alone after the other stopped");
}

/*
 * Waiters that a grant did not bring to launch within
 * VGPU_SCHED_DEAD_WAITERS_NS are presumed left by a dead process.  A live
 * thread kept off the CPU that long (a loaded machine) must not be lost:
 * tenant A's thread waits all along, is slow on its first grant, and
 * launches on every grant after.  B always wants the GPU.  live: A's thread
 * launches from its second grant on; else it never does (it died waiting).
 * Returns A's grants; *floored_at, *regained_at: when A was first taken for
 * leftovers, and given the GPU again.
 */
static int waiter(bool live, uint64_t end, uint64_t *floored_at, uint64_t *regained_at, uint64_t *b_got)
{
    struct vgpu_sched_state g;
    vgpu_sched_init(&g, 0);
    vgpu_sched_set(&g, 0, 500, VGPU_COMPUTE_SHARE_MODE, 0);
    vgpu_sched_set(&g, 1, 500, VGPU_COMPUTE_SHARE_MODE, 0);
    struct vgpu_sched_demand d = { 0 };
    uint64_t launches = 0, launched_ns = 0;
    int grants = 0;
    *floored_at = *regained_at = *b_got = 0;
    bool demand[VGPU_SCHED_MAX_ENTRIES] = { false, true }, was = false;
    for (uint64_t now = 0; now < end; now += MS) {
        bool holds = g.holder == 0;
        bool launching = holds && live && grants >= 2;
        if (launching) {
            launches++;
            launched_ns = now;
        }
        uint32_t left;
        demand[0] = vgpu_sched_demand(&d, holds, launching ? 0 : 1, 0, launches, launched_ns, now, &left);
        if (left && !*floored_at)
            *floored_at = now;
        uint64_t idle = holds && !demand[0] ? (launched_ns ? launched_ns : now) : 0;
        if (vgpu_sched_due(&g, now) || demand[0] != was) {
            int before = g.holder;
            vgpu_sched_step(&g, now, demand, idle, 0);
            if (g.holder == 0 && before != 0) {
                grants++;
                vgpu_sched_demand_granted(&d, launches, now);
                if (grants == 2)
                    *regained_at = now;
            }
        }
        was = demand[0];
        if (g.holder == 1)
            *b_got += MS;
    }
    return grants;
}

static void slow_waiter_not_lost(void)
{
    uint64_t floored, regained, b_got;
    waiter(true, 5 * S, &floored, &regained, &b_got);
    CHECK(floored > 0, "the slow first grant was never taken for leftovers: the scenario tests nothing");
    CHECK(regained > floored && regained - floored <= VGPU_SCHED_FLOOR_TTL_NS + 2 * VGPU_SCHED_QUANTUM_NS,
          "the live waiter got the GPU back %.0f ms after it was taken for a leftover, want within %.0f ms",
          (double)(regained - floored) / 1e6, (double)(VGPU_SCHED_FLOOR_TTL_NS + 2 * VGPU_SCHED_QUANTUM_NS) / 1e6);
}

/* Dead waiters are found again, less and less often: their grants cost the
 * live tenant little. */
static void dead_waiters_cost_little(void)
{
    uint64_t floored, regained, b_got;
    int grants = waiter(false, 64 * S, &floored, &regained, &b_got);
    CHECK(grants >= 2 && grants <= 8, "%d grants to dead waiters in 64 s, want 2 to 8 (1 s, 2 s, 4 s... apart)", grants);
    CHECK(pct(b_got, 64 * S) >= 97, "the live tenant had %.1f%% of the GPU beside dead waiters, want 97%% or more",
          pct(b_got, 64 * S));
}

/*
 * The holder's fill, sampled every millisecond: a holder whose threads
 * never wait for their own queued work (a host-bound loop) opens the GPU
 * to the others within a few samples; one that waits on it most of the
 * time (a GPU-bound one) closes it within about VGPU_SCHED_FILL_NS, and
 * opens it again once it goes back to leaving the GPU idle.  A cap never
 * counts: that is the gate's (vgpu_sched_page_may_launch), tested end to
 * end.  Returns the first time, from `from`, at which open is `want`.
 */
static uint64_t open_after(struct vgpu_sched_state *g, uint64_t from, bool waits, bool want)
{
    for (uint64_t now = from; now < from + 200 * MS; now += MS) {
        vgpu_sched_sample(g, now, waits);
        if (vgpu_sched_open(g) == want)
            return now - from;
    }
    return UINT64_MAX;
}

static void open_while_the_holder_leaves_it_idle(void)
{
    struct vgpu_sched_state g;
    vgpu_sched_init(&g, 0);
    vgpu_sched_set(&g, 0, 500, VGPU_COMPUTE_SHARE_MODE, 0);
    vgpu_sched_set(&g, 1, 500, VGPU_COMPUTE_SHARE_MODE, 0);
    bool demand[VGPU_SCHED_MAX_ENTRIES] = { true, true };
    CHECK(!vgpu_sched_open(&g), "open with nobody holding the GPU");
    vgpu_sched_step(&g, 0, demand, 0, 0);
    int h = g.holder;
    CHECK(h >= 0, "nobody was given the GPU");
    uint64_t t = open_after(&g, MS, false, true);
    CHECK(t <= 2 * MS, "a holder that never waits on the GPU opened it after %.0f ms, want at once", (double)t / 1e6);
    uint64_t closed = open_after(&g, 100 * MS, true, false);
    CHECK(closed <= VGPU_SCHED_FILL_NS, "a holder waiting on the GPU all along closed it after %.0f ms, want %.0f at most",
          (double)closed / 1e6, (double)VGPU_SCHED_FILL_NS / 1e6);
    CHECK(closed >= 3 * MS, "one or two samples closed the GPU (after %.0f ms): no sample may decide alone",
          (double)closed / 1e6);
    uint64_t again = open_after(&g, 300 * MS, false, true);
    CHECK(again <= 2 * VGPU_SCHED_FILL_NS, "the holder back to leaving the GPU idle reopened it after %.0f ms",
          (double)again / 1e6);
    /* Waiting 30% of the time (a loop that synchronises after each short
     * kernel) leaves it idle most of the time: open. */
    for (uint64_t now = 500 * MS; now < 800 * MS; now += MS)
        vgpu_sched_sample(&g, now, now / MS % 10 < 3);
    CHECK(vgpu_sched_open(&g), "a holder waiting 30%% of the time closed the GPU (fill %u permille)", g.e[h].fill);
    /* A sample after a long silence weighs a quarter at most. */
    uint32_t before = g.e[h].fill;
    vgpu_sched_sample(&g, 5 * S, true);
    CHECK(g.e[h].fill - before <= (1000 - before) / 4 + 1, "one sample after 4 s moved the fill from %u to %u permille",
          before, g.e[h].fill);
    /* The GPU passes to the other entry: its own fill decides now. */
    demand[h] = false;
    vgpu_sched_step(&g, 6 * S, demand, 6 * S, 0);
    CHECK(g.holder == 1 - h, "the GPU did not pass to the other entry");
    CHECK(vgpu_sched_open(&g), "a new holder never sampled (fill 0) did not open the GPU");
    /* A holder's fill is of its holding time: given the GPU again after a
     * long wait, its first sample (its threads just woken, not waiting on
     * the GPU yet) weighs its millisecond, not a quarter. */
    g.e[h].fill = 800;
    demand[h] = true;
    demand[1 - h] = false;
    vgpu_sched_step(&g, 7 * S, demand, 7 * S, 0);
    CHECK(g.holder == h, "the GPU did not pass back");
    vgpu_sched_sample(&g, 7 * S + MS, false);
    CHECK(g.e[h].fill >= 800 - 800 * MS / VGPU_SCHED_FILL_NS - 1,
          "the first sample of a turn weighed the time between turns: fill 800 fell to %u permille", g.e[h].fill);
    CHECK(!vgpu_sched_open(&g), "a holder that filled the GPU opened it at the start of its turn");
}

/* An entry that launches into an open GPU wants it, holder or not: when
 * the holder stops, the GPU passes to it. */
static void launching_entry_wants_the_gpu(void)
{
    struct vgpu_sched_demand d = { 0 };
    uint32_t left;
    CHECK(vgpu_sched_demand(&d, false, 0, 0, 7, 100 * MS, 101 * MS, &left),
          "an entry that launched 1 ms ago, not holding the GPU, has no demand");
    CHECK(!vgpu_sched_demand(&d, false, 0, 0, 7, 100 * MS, 100 * MS + VGPU_SCHED_IDLE_NS, &left),
          "an entry idle for %.0f ms still wants the GPU", (double)VGPU_SCHED_IDLE_NS / 1e6);
}

/*
 * Work queued at the end of a turn runs on into the next: a tenant of 75%
 * that launches CUDA graphs of 17.3 ms (not a divisor of the quantum)
 * beside a 25% one of short kernels.
 * Simulated GPU: at a change of holder, the old holder's graph in flight
 * runs to its end first; the arbiter is told how much of it is left (the
 * processes' estimate).  Each gets its share of the GPU's time, where
 * charging the tail to the next holder gave the 25% tenant 22.2%.
 */
static void queued_work_charged_to_who_queued_it(void)
{
    struct vgpu_sched_state g;
    vgpu_sched_init(&g, 0);
    vgpu_sched_set(&g, 0, 250, VGPU_COMPUTE_SHARE_MODE, 0);
    vgpu_sched_set(&g, 1, 750, VGPU_COMPUTE_SHARE_MODE, 0);
    bool demand[VGPU_SCHED_MAX_ENTRIES] = { true, true };
    const uint64_t tick = 100000, graph = 17300000, end = 20 * S;
    uint64_t left = 0, got[2] = { 0, 0 }; /* left: GPU time of tenant 1's graph in flight */
    for (uint64_t now = 0; now < end; now += tick) {
        if (vgpu_sched_due(&g, now))
            vgpu_sched_step(&g, now, demand, 0, g.holder == 1 ? left : 0);
        if (left) { /* tenant 1's graph runs, whoever holds the GPU */
            left -= tick;
            got[1] += tick;
        } else if (g.holder == 1) {
            left = graph - tick; /* it launches the next, which runs from now */
            got[1] += tick;
        } else if (g.holder == 0) {
            got[0] += tick;
        }
    }
    CHECK(pct(got[0], end) >= 23.5 && pct(got[0], end) <= 26.5,
          "the 25%% tenant beside one of 17.3 ms graphs had %.1f%% of the GPU, want 25%% +- 1.5", pct(got[0], end));
    CHECK(pct(got[1], end) >= 73.5 && pct(got[1], end) <= 76.5, "the 75%% tenant had %.1f%%", pct(got[1], end));
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } scenarios[] = {
        { "lone-cap", lone_cap },         { "lone-share", lone_share },   { "two-tenants", two_tenants },
        { "four-tenants", four_tenants }, { "cap-beside-share", cap_beside_share },
        { "convergence", convergence },   { "no-catch-up", no_catch_up }, { "idle-holder", idle_holder },
        { "cap-no-burst", cap_no_burst }, { "cap-in-whole-quanta", cap_in_whole_quanta },
        { "brief-pauses", brief_pauses }, { "slow-waiter-not-lost", slow_waiter_not_lost },
        { "dead-waiters-cost-little", dead_waiters_cost_little }, { "reconfigured", reconfigured },
        { "newcomer-after-a-lone-run", newcomer_after_a_lone_run },
        { "open-while-the-holder-leaves-it-idle", open_while_the_holder_leaves_it_idle },
        { "launching-entry-wants-the-gpu", launching_entry_wants_the_gpu },
        { "queued-work-charged-to-who-queued-it", queued_work_charged_to_who_queued_it },
    };
    for (size_t i = 0; argc == 2 && i < sizeof(scenarios) / sizeof(*scenarios); i++)
        if (strcmp(argv[1], scenarios[i].name) == 0) {
            scenarios[i].run();
            if (failures)
                return 1;
            printf("ok - %s\n", argv[1]);
            return 0;
        }
    fprintf(stderr, "usage: sched_arbiter_test SCENARIO\n");
    return 2;
}
