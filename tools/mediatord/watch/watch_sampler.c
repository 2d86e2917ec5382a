/* Readings of the driver, on a thread of their own; see watch_sampler.h. */
#define _GNU_SOURCE
#include "tools/mediatord/watch/watch_sampler.h"

#include "common/error.h"
#include "forwarder/real_nvml.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

struct med_sampler {
    pthread_t thread;
    int efd;
    /* The thread's own: the devices, as NVML hands them out. */
    const struct vgpu_real_nvml *nvml;
    enum med_sample_kind kind;
    int ngpus;
    nvmlDevice_t dev[MED_MAX_GPUS];
    unsigned long long last_seen_us[MED_MAX_GPUS]; /* utilization: the previous reading's CPU time */
    /* Shared with the loop's thread, under lock. */
    pthread_mutex_t lock;
    pthread_cond_t changed; /* on CLOCK_MONOTONIC */
    unsigned interval_ms;
    uint64_t gpus;
    bool have;
    struct med_reading latest;
};

void med_reading_free(struct med_reading *r)
{
    for (int i = 0; i < r->n; i++) {
        free(r->gpu[i].procs);
        free(r->gpu[i].samples);
    }
    r->n = 0;
}

static uint64_t clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

/* The samples taken since the previous reading of GPU k (the first: of the
 * last second), so that each sample is counted in one reading only. */
static void read_utilization(struct med_sampler *s, int k, struct med_reading_gpu *g)
{
    unsigned long long now_us = clock_us(CLOCK_REALTIME), since = s->last_seen_us[k];
    if (!since || since > now_us)
        since = now_us - 1000000;
    g->ok = s->dev[k] && vgpu_real_nvml_utilization(s->nvml, s->dev[k], since, &g->samples, &g->n) == NVML_SUCCESS;
    if (g->ok)
        s->last_seen_us[k] = now_us;
}

static void read_all(struct med_sampler *s, uint64_t gpus, struct med_reading *r)
{
    memset(r, 0, sizeof(*r));
    r->taken_ns = clock_us(CLOCK_MONOTONIC) * 1000;
    for (int k = 0; k < s->ngpus; k++) {
        if (!(gpus >> k & 1))
            continue;
        struct med_reading_gpu *g = &r->gpu[r->n++];
        g->gpu = k;
        if (s->kind == MED_SAMPLE_UTILIZATION) {
            read_utilization(s, k, g);
            continue;
        }
        g->procs = s->dev[k] ? vgpu_real_nvml_processes(s->nvml, s->dev[k], &g->n) : NULL;
        g->ok = g->procs != NULL;
    }
}

static struct timespec after_ms(const struct timespec *t, unsigned ms)
{
    struct timespec due = { t->tv_sec + ms / 1000, t->tv_nsec + (long)(ms % 1000) * 1000000 };
    if (due.tv_nsec >= 1000000000) {
        due.tv_sec++;
        due.tv_nsec -= 1000000000;
    }
    return due;
}

static void *run(void *arg)
{
    struct med_sampler *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->interval_ms)
            pthread_cond_wait(&s->changed, &s->lock);
        uint64_t gpus = s->gpus;
        pthread_mutex_unlock(&s->lock);
        struct timespec taken;
        clock_gettime(CLOCK_MONOTONIC, &taken);
        struct med_reading r;
        read_all(s, gpus, &r);
        pthread_mutex_lock(&s->lock);
        if (s->have)
            med_reading_free(&s->latest);
        s->latest = r;
        s->have = true;
        uint64_t one = 1;
        (void)!write(s->efd, &one, sizeof(one));
        /* Until the next is due, by the interval in force (a reload may change it meanwhile). */
        while (s->interval_ms) {
            struct timespec due = after_ms(&taken, s->interval_ms);
            if (pthread_cond_timedwait(&s->changed, &s->lock, &due) == ETIMEDOUT)
                break;
        }
    }
    return NULL;
}

struct med_sampler *med_sampler_start(const struct med_gpus *g, enum med_sample_kind kind, char *err,
                                      size_t errlen)
{
    const char *why = NULL;
    struct med_sampler *s = calloc(1, sizeof(*s));
    if (!s) {
        vgpu_fail(err, errlen, "out of memory");
        return NULL;
    }
    if (!(s->nvml = vgpu_real_nvml(&why))) {
        vgpu_fail(err, errlen, "%s", why);
        free(s);
        return NULL;
    }
    s->kind = kind;
    s->ngpus = g->n;
    for (int k = 0; k < g->n; k++)
        if (s->nvml->by_uuid(g->gpu[k].uuid, &s->dev[k]) != NVML_SUCCESS)
            s->dev[k] = NULL; /* read as failing, every time: said by the watch */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->changed, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&s->lock, NULL);
    s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int e = s->efd < 0 ? errno : pthread_create(&s->thread, NULL, run, s);
    if (e) {
        vgpu_fail(err, errlen, "cannot start the %s thread: %s",
                  kind == MED_SAMPLE_UTILIZATION ? "compute views'" : "watch's", strerror(e));
        if (s->efd >= 0)
            close(s->efd);
        free(s);
        return NULL;
    }
    return s;
}

int med_sampler_fd(const struct med_sampler *s)
{
    return s->efd;
}

void med_sampler_set(struct med_sampler *s, unsigned interval_ms, uint64_t gpus)
{
    pthread_mutex_lock(&s->lock);
    if (s->interval_ms != interval_ms || s->gpus != gpus) {
        s->interval_ms = interval_ms;
        s->gpus = gpus;
        pthread_cond_signal(&s->changed);
    }
    pthread_mutex_unlock(&s->lock);
}

bool med_sampler_take(struct med_sampler *s, struct med_reading *out)
{
    uint64_t count;
    (void)!read(s->efd, &count, sizeof(count));
    pthread_mutex_lock(&s->lock);
    bool have = s->have;
    if (have)
        *out = s->latest;
    s->have = false;
    pthread_mutex_unlock(&s->lock);
    return have;
}
