/* The compute share's views: held time and utilization per interval; see utilization.h. */
#define _GNU_SOURCE
#include "tools/mediatord/compute/utilization.h"

#include "common/log.h"
#include "tools/mediatord/watch/watch_share.h"

#include <stdlib.h>
#include <time.h>
#include <string.h>

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int med_views_start(struct med_views *m, const struct med_gpus *g, const struct med_sched *s, char *err,
                    size_t errlen)
{
    memset(m, 0, sizeof(*m));
    m->gpus = g;
    m->sched = s;
    m->sampler = med_sampler_start(g, MED_SAMPLE_UTILIZATION, err, errlen);
    return m->sampler ? 0 : -1;
}

int med_views_fd(const struct med_views *m)
{
    return med_sampler_fd(m->sampler);
}

static int index_of(const struct med_views *m, const struct med_gpu *gpu)
{
    return (int)(gpu - m->gpus->gpu);
}

void med_views_configure(struct med_views *m, const struct med_world *world)
{
    uint64_t gpus = 0;
    for (int i = 0; i < world->vgpus->n; i++) {
        const struct med_vgpu *v = world->vgpus->v[i];
        for (uint32_t d = 0; d < v->regs.device_count && d < VGPU_MAX_DEVICES; d++)
            if (v->gpu[d])
                gpus |= 1ull << index_of(m, v->gpu[d]);
    }
    m->read = gpus;
    med_sampler_set(m->sampler, gpus ? MED_VIEWS_INTERVAL_MS : 0, gpus);
}

bool med_views_charged(const struct med_sched *s, int gi, const struct med_vgpu *v, int d, uint64_t *busy_ns,
                       uint64_t *launches)
{
    if (gi < 0 || gi >= MED_MAX_GPUS)
        return false;
    const struct med_sched_gpu *sg = &s->gpu[gi];
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++)
        if (sg->m[i].v == v && sg->m[i].d == d) {
            *busy_ns = sg->s.e[i].busy_ns;
            *launches = sg->m[i].launches;
            return true;
        }
    return false;
}

/* One process's utilization in a reading: the mean of its samples, permille. */
struct pid_use {
    unsigned pid;
    unsigned samples;
    uint64_t sum; /* percent, summed */
};

static int by_pid(const void *a, const void *b)
{
    unsigned x = ((const struct pid_use *)a)->pid, y = ((const struct pid_use *)b)->pid;
    return x < y ? -1 : x > y;
}

/* The reading's samples, one entry per pid, sorted by pid (malloc'd; *n set). */
static struct pid_use *per_pid(const struct med_reading_gpu *g, unsigned *n)
{
    struct pid_use *u = calloc(g->n ? g->n : 1, sizeof(*u));
    *n = 0;
    if (!u)
        return NULL;
    for (unsigned j = 0; j < g->n; j++) {
        unsigned k = 0;
        while (k < *n && u[k].pid != g->samples[j].pid)
            k++;
        if (k == *n)
            u[(*n)++].pid = g->samples[j].pid;
        u[k].samples++;
        u[k].sum += g->samples[j].smUtil > 100 ? 100 : g->samples[j].smUtil;
    }
    qsort(u, *n, sizeof(*u), by_pid);
    return u;
}

static uint16_t permille_of(const struct pid_use *u, unsigned n, pid_t pid)
{
    struct pid_use key = { .pid = (unsigned)pid };
    const struct pid_use *found = pid > 0 ? bsearch(&key, u, n, sizeof(*u), by_pid) : NULL;
    return found ? (uint16_t)(found->sum * 10 / found->samples) : 0;
}

/* A process's utilization: the mean of what the last MED_UTIL_READINGS
 * readings gave it.  On a GPU that time-slices between processes the
 * driver samples about once a second, each sample for the process whose
 * context was running at that moment (nvidia-smi pmon shows "-" for the
 * others; measured on the H100, bench/results/2026-11-23-9c2504d-compute-llm-nvml-views-watch.md): one reading says
 * little of a process that ran a quarter of the time, and the mean of ten
 * is its share of them. */
static uint16_t smoothed(struct med_compute_use *use, uint16_t now)
{
    use->recent[use->next] = now;
    use->next = (uint8_t)((use->next + 1) % MED_UTIL_READINGS);
    if (use->nrecent < MED_UTIL_READINGS)
        use->nrecent++;
    uint32_t sum = 0;
    for (unsigned i = 0; i < use->nrecent; i++)
        sum += use->recent[i];
    return (uint16_t)(sum / use->nrecent);
}

/* The driver's samples of GPU gi over the interval, for the host vGPUs on it
 * and their processes (NULL g: the driver did not give them). */
static void measure_gpu(struct med_views *m, struct med_world *world, int gi, const struct med_reading_gpu *g)
{
    unsigned n = 0;
    struct pid_use *u = g ? per_pid(g, &n) : NULL;
    for (int i = 0; i < world->vgpus->n; i++) {
        struct med_vgpu *v = world->vgpus->v[i];
        for (uint32_t d = 0; d < v->regs.device_count && d < VGPU_MAX_DEVICES; d++) {
            if (!v->gpu[d] || index_of(m, v->gpu[d]) != gi)
                continue;
            /* A VM's processes are not the host's: the driver shows them as its QEMU. */
            bool measured = u && !v->conf.guest;
            uint32_t sum = 0;
            for (int k = 0; k < v->nadm; k++) {
                struct med_admission *a = v->adm[k];
                a->use[d].measured = measured;
                a->use[d].latest = measured ? permille_of(u, n, a->pid) : 0;
                if (measured)
                    a->use[d].utilization = smoothed(&a->use[d], a->use[d].latest);
                else
                    a->use[d].utilization = a->use[d].nrecent = a->use[d].next = 0;
                if (med_vgpu_first_of_pid(v, k))
                    sum += a->use[d].utilization;
            }
            v->use[d].measured = measured;
            v->use[d].utilization = (uint16_t)(sum > 1000 ? 1000 : sum);
        }
    }
    free(u);
}

/* What the arbiter charged each vGPU device since the previous reading, dt_ns ago (0: this is the first). */
static void measure_held(struct med_views *m, struct med_world *world, uint64_t dt_ns)
{
    for (int i = 0; i < world->vgpus->n; i++) {
        struct med_vgpu *v = world->vgpus->v[i];
        for (uint32_t d = 0; d < v->regs.device_count && d < VGPU_MAX_DEVICES; d++) {
            struct med_compute_use *use = &v->use[d];
            uint64_t busy = 0, launches;
            bool known = v->gpu[d] && med_views_charged(m->sched, index_of(m, v->gpu[d]), v, (int)d, &busy, &launches);
            uint64_t held = known && use->busy_known && dt_ns && busy >= use->busy_ns
                                ? (busy - use->busy_ns) * 1000 / dt_ns
                                : 0;
            use->held = (uint16_t)(held > 1000 ? 1000 : held);
            use->busy_ns = busy;
            use->busy_known = known;
        }
    }
}

void med_views_readable(struct med_views *m, struct med_world *world)
{
    struct med_reading r;
    if (!med_sampler_take(m->sampler, &r))
        return;
    uint64_t dt = m->last_ns && r.taken_ns > m->last_ns ? r.taken_ns - m->last_ns : 0, from = m->last_ns;
    m->last_ns = r.taken_ns;
    measure_held(m, world, dt);
    uint64_t in_reading = 0;
    for (int i = 0; i < r.n; i++) {
        const struct med_reading_gpu *g = &r.gpu[i];
        const struct med_gpu *gpu = &m->gpus->gpu[g->gpu];
        in_reading |= 1ull << g->gpu;
        if (g->ok) {
            if (m->failing >> g->gpu & 1)
                vgpu_info("compute views: the driver gives the per-process utilization on GPU %u (%s) again",
                          gpu->index, gpu->uuid);
            m->failing &= ~(1ull << g->gpu);
        } else if (!(m->failing >> g->gpu & 1)) {
            m->failing |= 1ull << g->gpu;
            vgpu_warn("compute views: the driver's NVML gives no per-process utilization on GPU %u (%s) "
                      "(nvmlDeviceGetProcessUtilization failed): vgpu-smi and the metrics show the GPU time the "
                      "arbiter gives each vGPU there, and no utilization", gpu->index, gpu->uuid);
        }
        measure_gpu(m, world, g->gpu, g->ok ? g : NULL);
        if (g->ok && dt)
            med_watch_share_judge(world, m->sched, g->gpu, from, now_ms());
    }
    /* GPUs not read (their vGPUs came after it was taken): nothing measured yet. */
    for (int gi = 0; gi < m->gpus->n; gi++)
        if (!(in_reading >> gi & 1))
            measure_gpu(m, world, gi, NULL);
    if (dt) {
        m->interval_ms = (uint32_t)(dt / 1000000);
        m->intervals++;
    }
    med_reading_free(&r);
    med_views_configure(m, world);
}
