/* Prometheus metrics over HTTP; see metrics.h. */
#define _GNU_SOURCE
#include "tools/mediatord/clients/metrics.h"

#include "common/log.h"
#include "tools/mediatord/clients/status.h"
#include "tools/mediatord/compute/utilization.h"
#include "tools/mediatord/watch/watch.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define REQUEST_MAX 4096

struct med_http {
    int fd;
    uint64_t accepted_ms;
    size_t have;
    char in[REQUEST_MAX];
};

/* "HOST:PORT" of a listening socket, the port as bound. */
static void address_of(int fd, char *out, size_t len)
{
    struct sockaddr_storage sa;
    socklen_t salen = sizeof(sa);
    char host[NI_MAXHOST], port[NI_MAXSERV];
    if (getsockname(fd, (struct sockaddr *)&sa, &salen) != 0 ||
        getnameinfo((struct sockaddr *)&sa, salen, host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        snprintf(out, len, "?");
    else
        snprintf(out, len, sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

int med_metrics_listen(const char *hostport, char *where, size_t wherelen, char *err, size_t errlen)
{
    char host[128];
    snprintf(host, sizeof(host), "%s", hostport);
    char *colon = strrchr(host, ':');
    if (!colon || !colon[1]) {
        snprintf(err, errlen, "metrics %s: expected HOST:PORT, such as 127.0.0.1:9400", hostport);
        return -1;
    }
    *colon = '\0';
    const char *port = colon + 1, *name = host;
    if (name[0] == '[') { /* [::1]:9400 */
        name++;
        char *close_bracket = strchr(name, ']');
        if (close_bracket)
            *close_bracket = '\0';
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE },
                    *res = NULL;
    int r = getaddrinfo(*name ? name : NULL, port, &hints, &res);
    if (r != 0) {
        snprintf(err, errlen, "metrics %s: %s", hostport, gai_strerror(r));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        int one = 1;
        if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
                        bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 16) != 0)) {
            snprintf(err, errlen, "metrics %s: %s", hostport, strerror(errno));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd >= 0)
        address_of(fd, where, wherelen);
    return fd;
}

struct med_http *med_http_accept(int fd, uint64_t now_ms)
{
    struct med_http *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->fd = fd;
    h->accepted_ms = now_ms;
    struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return h;
}

int med_http_fd(const struct med_http *h)
{
    return h->fd;
}

bool med_http_expired(const struct med_http *h, uint64_t now_ms)
{
    return now_ms - h->accepted_ms > MED_HTTP_TIMEOUT_MS;
}

void med_http_close(struct med_http *h)
{
    close(h->fd);
    free(h);
}

/* ---- the page ---- */

struct text {
    char *buf;
    size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = t->buf ? vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap) : -1;
        va_end(ap);
        if (n >= 0 && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 16384;
        char *grown = realloc(t->buf, cap);
        if (!grown)
            return;
        t->buf = grown;
        t->cap = cap;
    }
}

struct family {
    const char *name, *type, *help;
};

static const struct family device_families[] = {
    { "vgpu_memory_quota_bytes", "gauge", "Device memory quota of a vGPU on a GPU (the GPU's memory when it has none)." },
    { "vgpu_memory_used_bytes", "gauge", "Device memory the vGPU's processes hold on the GPU, context overhead included." },
    { "vgpu_memory_refusals_total", "counter", "Allocations refused for the vGPU's quota on the GPU." },
    { "vgpu_compute_share_percent", "gauge", "The vGPU's compute share of the GPU." },
};

static uint64_t device_value(int family, const struct vgpu_status_device *d)
{
    switch (family) {
    case 0: return d->limit ? d->limit : d->physical_total;
    case 1: return d->used;
    case 2: return d->refusals;
    default: return d->compute;
    }
}

/* A label value, escaped as the text format wants: a GPU's name or the
 * host's come from outside. */
static void put_label(struct text *t, const char *name, const char *value, bool comma)
{
    put(t, "%s%s=\"", comma ? "," : "", name);
    for (const char *c = value; *c; c++) {
        const char *escaped = *c == '"' ? "\\\"" : *c == '\\' ? "\\\\" : *c == '\n' ? "\\n" : NULL;
        if (escaped)
            put(t, "%s", escaped);
        else
            put(t, "%c", *c);
    }
    put(t, "\"");
}

/* The labels the DCGM exporter gives a GPU, so that the two join; a GPU
 * not on this machine (g NULL) has only its UUID, as configured. */
static void dcgm_labels(struct text *t, const struct med_gpu *g, const char *uuid, const char *hostname)
{
    char index[16] = "";
    if (g)
        snprintf(index, sizeof(index), "%u", g->index);
    put_label(t, "gpu", index, false);
    put_label(t, "UUID", g ? g->uuid : uuid, true);
    put_label(t, "pci_bus_id", g ? g->pci_bus_id : "", true);
    put_label(t, "modelName", g ? g->name : "", true);
    put_label(t, "Hostname", hostname, true);
}

static void gpu_labels(struct text *t, const struct med_watch *watch, int k)
{
    dcgm_labels(t, &watch->gpus->gpu[k], NULL, watch->hostname);
}

/* A vGPU's device: the GPU's labels, then vgpu's own (never DCGM's device="nvidia0"). */
static void vgpu_device_labels(struct text *t, const struct med_world *w, const struct med_gpu *g, const char *uuid,
                               const char *vgpu, uint32_t d)
{
    char index[16];
    snprintf(index, sizeof(index), "%u", d);
    dcgm_labels(t, g, uuid, w->watch->hostname);
    put_label(t, "vgpu", vgpu, true);
    put_label(t, "vgpu_device", index, true);
}

static const struct med_gpu *gpu_numbered(const struct med_gpus *g, uint32_t index)
{
    for (int k = 0; k < g->n; k++)
        if (g->gpu[k].index == index)
            return &g->gpu[k];
    return NULL;
}

/* Reported cases on GPU k: of the rule (0: either over-quota rule), of vGPU name (NULL: any). */
static bool over_quota(enum vgpu_watch_rule rule)
{
    return rule == VGPU_WATCH_OVER_QUOTA || rule == VGPU_WATCH_VGPU_OVER_QUOTA;
}

static unsigned count_cases(const struct med_watch *watch, int k, enum vgpu_watch_rule rule, const char *name)
{
    unsigned n = 0;
    for (int i = 0; i < watch->ncases; i++) {
        const struct med_watch_case *c = &watch->cases[i];
        n += c->reported && c->gpu == k && (rule ? c->rule == rule : over_quota(c->rule)) &&
             (!name || strcmp(c->vgpu, name) == 0);
    }
    return n;
}

/* The watch's findings, by GPU (and vGPU). */
static void watch_metrics(struct text *t, const struct med_world *w)
{
    const struct med_watch *watch = w->watch;
    if (!watch)
        return;
    put(t, "# HELP vgpu_watch_unadmitted_processes Processes using the GPU that vgpu-mediatord admitted to no vGPU "
           "on it (two readings running).\n# TYPE vgpu_watch_unadmitted_processes gauge\n");
    for (int k = 0; k < watch->gpus->n; k++)
        if (watch->watched >> k & 1) {
            put(t, "vgpu_watch_unadmitted_processes{");
            gpu_labels(t, watch, k);
            put(t, "} %u\n", count_cases(watch, k, VGPU_WATCH_UNADMITTED, NULL));
        }
    put(t, "# HELP vgpu_watch_over_quota_processes Processes of the vGPU holding more on the GPU than its quota "
           "allows, alone or together (two readings running).\n# TYPE vgpu_watch_over_quota_processes gauge\n");
    for (int i = 0; i < w->vgpus->n; i++) {
        const struct med_vgpu *v = w->vgpus->v[i];
        for (uint32_t d = 0; !v->conf.guest && d < v->regs.device_count && d < VGPU_MAX_DEVICES; d++) {
            int k = v->gpu[d] ? (int)(v->gpu[d] - watch->gpus->gpu) : -1;
            if (k < 0 || !(watch->watched >> k & 1))
                continue;
            put(t, "vgpu_watch_over_quota_processes{");
            gpu_labels(t, watch, k);
            put(t, ",vgpu=\"%s\"} %u\n", v->conf.name, count_cases(watch, k, 0, v->conf.name));
        }
    }
    put(t, "# HELP vgpu_watch_over_share_processes Processes of the vGPU that used the GPU while the vGPU was given "
           "none of it (its compute share's arbitration).\n# TYPE vgpu_watch_over_share_processes gauge\n");
    for (int i = 0; i < w->vgpus->n; i++) {
        const struct med_vgpu *v = w->vgpus->v[i];
        for (uint32_t d = 0; !v->conf.guest && d < v->regs.device_count && d < VGPU_MAX_DEVICES; d++) {
            int k = v->gpu[d] ? (int)(v->gpu[d] - watch->gpus->gpu) : -1;
            if (k < 0 || !(watch->watched >> k & 1))
                continue;
            put(t, "vgpu_watch_over_share_processes{");
            gpu_labels(t, watch, k);
            put(t, ",vgpu=\"%s\"} %u\n", v->conf.name, count_cases(watch, k, VGPU_WATCH_OVER_SHARE, v->conf.name));
        }
    }
    put(t, "# HELP vgpu_watch_kills_total Processes vgpu-mediatord killed on the GPU (enforce = kill), by the rule "
           "they broke.\n# TYPE vgpu_watch_kills_total counter\n");
    static const char *const rules[] = { "unadmitted", "over_quota", "over_share" };
    for (int k = 0; k < watch->gpus->n; k++)
        for (int r = 0; r < 3; r++)
            if (watch->watched >> k & 1 || watch->kills[k][r]) {
                put(t, "vgpu_watch_kills_total{");
                gpu_labels(t, watch, k);
                put(t, ",vgpu_rule=\"%s\"} %llu\n", rules[r], (unsigned long long)watch->kills[k][r]);
            }
    put(t, "# HELP vgpu_watch_failed_readings_total Readings of the GPU's processes the driver did not answer.\n"
           "# TYPE vgpu_watch_failed_readings_total counter\n");
    for (int k = 0; k < watch->gpus->n; k++)
        if (watch->watched >> k & 1 || watch->failed_readings[k]) {
            put(t, "vgpu_watch_failed_readings_total{");
            gpu_labels(t, watch, k);
            put(t, "} %llu\n", (unsigned long long)watch->failed_readings[k]);
        }
    put(t, "# HELP vgpu_watch_readings_total Readings of the driver the watch has taken.\n"
           "# TYPE vgpu_watch_readings_total counter\nvgpu_watch_readings_total %llu\n",
        (unsigned long long)watch->readings);
    put(t, "# HELP vgpu_watch_interval_seconds Time between the watch's readings; 0: off.\n"
           "# TYPE vgpu_watch_interval_seconds gauge\nvgpu_watch_interval_seconds %g\n", watch->interval_ms / 1e3);
}

struct compute_family {
    const char *name, *type, *help;
    double (*value)(const struct vgpu_compute_device *d, bool *shown);
};

static double busy_seconds(const struct vgpu_compute_device *d, bool *shown)
{
    (void)shown;
    return (double)d->busy_ns / 1e9;
}

static double held_percent(const struct vgpu_compute_device *d, bool *shown)
{
    *shown = d->flags & VGPU_COMPUTE_ARBITRATED;
    return d->held / 10.0;
}

static double utilization_percent(const struct vgpu_compute_device *d, bool *shown)
{
    *shown = d->flags & VGPU_COMPUTE_MEASURED;
    return d->utilization / 10.0;
}

static double holding(const struct vgpu_compute_device *d, bool *shown)
{
    (void)shown;
    return d->flags & VGPU_COMPUTE_HOLDING ? 1 : 0;
}

static double beside(const struct vgpu_compute_device *d, bool *shown)
{
    (void)shown;
    return d->flags & VGPU_COMPUTE_BESIDE ? 1 : 0;
}

static double launch_seconds(const struct vgpu_compute_device *d, bool *shown)
{
    (void)shown;
    return (double)d->launch_ms / 1e3;
}

/* Percent, as DCGM's DCGM_FI_DEV_GPU_UTIL and vgpu_compute_share_percent are, so that the three compare. */
static const struct compute_family compute_families[] = {
    { "vgpu_compute_busy_seconds_total", "counter",
      "GPU time the compute share's arbiter charged the vGPU on the GPU (sched_busy_ns).", busy_seconds },
    { "vgpu_compute_held_percent", "gauge",
      "GPU time the arbiter charged the vGPU over the last interval, in percent of the interval (only where "
      "the GPU is arbitrated).", held_percent },
    { "vgpu_compute_utilization_percent", "gauge",
      "Utilization of the GPU by the vGPU's processes over the last interval, from the driver's per-process "
      "samples, summed (at most 100).", utilization_percent },
    { "vgpu_compute_holding", "gauge", "1 while the arbiter gives the GPU to the vGPU; else 0.", holding },
    { "vgpu_compute_beside_holder", "gauge",
      "1 while the vGPU may launch beside the holder, which leaves the GPU open; else 0.", beside },
    { "vgpu_compute_launch_seconds_total", "counter",
      "Process-seconds in which the vGPU's processes launched work on the arbitrated GPU, counted a millisecond "
      "at a time: launch activity, not kernels.", launch_seconds },
};

static const char *const mode_names[] = { "none", "share", "cap" };

/* The compute share's views: per vGPU device and per process (COMPUTE). */
static void compute_metrics(struct text *t, struct med_world *w)
{
    uint32_t len;
    uint8_t *payload = med_compute_build(w, 0, 0, NULL, 0, &len);
    if (!payload)
        return;
    const struct med_gpus *gpus = w->watch->gpus;
    struct vgpu_msg m = { .type = VGPU_MSG_COMPUTE, .length = len, .compute = payload };
    struct vgpu_compute_header h;
    vgpu_proto_compute_header(&m, &h);
    put(t, "# HELP vgpu_compute_mode How the vGPU's compute share holds on the GPU: share (work-conserving), cap "
           "(a hard cap) or none (no share).\n# TYPE vgpu_compute_mode gauge\n");
    for (uint32_t i = 0; i < h.ndevs; i++) {
        struct vgpu_compute_device d;
        vgpu_proto_compute_device(&m, i, &d);
        put(t, "vgpu_compute_mode{");
        vgpu_device_labels(t, w, gpu_numbered(gpus, d.gpu), "", d.vgpu, d.device);
        put(t, ",vgpu_mode=\"%s\"} 1\n", mode_names[d.mode]);
    }
    for (size_t f = 0; f < sizeof(compute_families) / sizeof(*compute_families); f++) {
        const struct compute_family *c = &compute_families[f];
        put(t, "# HELP %s %s\n# TYPE %s %s\n", c->name, c->help, c->name, c->type);
        for (uint32_t i = 0; i < h.ndevs; i++) {
            struct vgpu_compute_device d;
            vgpu_proto_compute_device(&m, i, &d);
            bool shown = true;
            double value = c->value(&d, &shown);
            if (!shown)
                continue;
            put(t, "%s{", c->name);
            vgpu_device_labels(t, w, gpu_numbered(gpus, d.gpu), "", d.vgpu, d.device);
            put(t, "} %.9g\n", value);
        }
    }
    put(t, "# HELP vgpu_process_compute_utilization_percent Utilization of the GPU by the admitted process over the "
           "last interval, from the driver's per-process samples.\n"
           "# TYPE vgpu_process_compute_utilization_percent gauge\n");
    for (uint32_t i = 0; i < h.nprocs; i++) {
        struct vgpu_compute_proc p;
        vgpu_proto_compute_proc(&m, i, &p);
        if (!(p.flags & VGPU_COMPUTE_MEASURED))
            continue;
        put(t, "vgpu_process_compute_utilization_percent{");
        vgpu_device_labels(t, w, gpu_numbered(gpus, p.gpu), "", p.vgpu, p.device);
        put(t, ",pid=\"%u\"} %.9g\n", p.pid, p.utilization / 10.0);
    }
    put(t, "# HELP vgpu_compute_interval_seconds What the held time and utilization are measured over; 0: not yet "
           "measured.\n# TYPE vgpu_compute_interval_seconds gauge\nvgpu_compute_interval_seconds %g\n",
        h.interval_ms / 1e3);
    free(payload);
}

char *med_metrics_text(struct med_world *w)
{
    uint32_t len;
    uint8_t *payload = med_status_build(w, 0, 0, NULL, 0, &len);
    if (!payload)
        return NULL;
    struct vgpu_msg m = { .type = VGPU_MSG_STATUS, .length = len, .status = payload };
    struct vgpu_status_header h;
    vgpu_proto_status_header(&m, &h);
    struct text t = { 0 };
    struct vgpu_status_vgpu *v = calloc(h.nvgpus ? h.nvgpus : 1, sizeof(*v));
    for (uint32_t i = 0; v && i < h.nvgpus; i++)
        vgpu_proto_status_vgpu(&m, i, &v[i]);
    for (int f = 0; v && f < (int)(sizeof(device_families) / sizeof(*device_families)); f++) {
        put(&t, "# HELP %s %s\n# TYPE %s %s\n", device_families[f].name, device_families[f].help,
            device_families[f].name, device_families[f].type);
        for (uint32_t i = 0; i < h.nvgpus; i++)
            for (uint32_t d = 0; d < v[i].ndev; d++) {
                put(&t, "%s{", device_families[f].name);
                vgpu_device_labels(&t, w, med_gpus_find(w->watch->gpus, v[i].dev[d].uuid), v[i].dev[d].uuid,
                                   v[i].name, d);
                put(&t, "} %llu\n", (unsigned long long)device_value(f, &v[i].dev[d]));
            }
    }
    compute_metrics(&t, w);
    put(&t, "# HELP vgpu_processes Processes holding a slot of the vGPU.\n# TYPE vgpu_processes gauge\n");
    for (uint32_t i = 0; v && i < h.nvgpus; i++)
        put(&t, "vgpu_processes{vgpu=\"%s\"} %u\n", v[i].name, v[i].processes);
    put(&t, "# HELP vgpu_admission_refusals_total Processes the mediator refused, by the vGPU they asked for.\n"
            "# TYPE vgpu_admission_refusals_total counter\n");
    for (uint32_t i = 0; v && i < h.nvgpus; i++)
        put(&t, "vgpu_admission_refusals_total{vgpu=\"%s\"} %llu\n", v[i].name,
            (unsigned long long)v[i].refused_admissions);
    put(&t, "# HELP vgpu_mediator_admission_refusals_total Processes the mediator refused, all vGPUs.\n"
            "# TYPE vgpu_mediator_admission_refusals_total counter\nvgpu_mediator_admission_refusals_total %llu\n",
        (unsigned long long)h.refused_admissions);
    put(&t, "# HELP vgpu_mediator_info The mediator's version and start count.\n# TYPE vgpu_mediator_info gauge\n"
            "vgpu_mediator_info{version=\"%s\",epoch=\"%u\"} 1\n", h.version, h.epoch);
    watch_metrics(&t, w);
    free(v);
    free(payload);
    return t.buf;
}

/* ---- the request ---- */

static void respond(int fd, const char *status, const char *type, const char *body)
{
    char head[256];
    size_t blen = body ? strlen(body) : 0;
    int n = snprintf(head, sizeof(head), "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, type, blen);
    if (send(fd, head, (size_t)n, MSG_NOSIGNAL) != n)
        return;
    for (size_t sent = 0; sent < blen;) {
        ssize_t k = send(fd, body + sent, blen - sent, MSG_NOSIGNAL);
        if (k <= 0)
            return;
        sent += (size_t)k;
    }
}

bool med_http_readable(struct med_http *h, struct med_world *w)
{
    ssize_t n = recv(h->fd, h->in + h->have, sizeof(h->in) - 1 - h->have, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    if (n <= 0)
        return false;
    h->have += (size_t)n;
    h->in[h->have] = '\0';
    if (!strstr(h->in, "\r\n\r\n") && !strstr(h->in, "\n\n")) {
        if (h->have < sizeof(h->in) - 1)
            return true;
        respond(h->fd, "431 Request Header Fields Too Large", "text/plain", "request too large\n");
        return false;
    }
    if (strncmp(h->in, "GET /metrics ", 13) == 0 || strncmp(h->in, "GET /metrics?", 13) == 0) {
        char *page = med_metrics_text(w);
        if (page)
            respond(h->fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", page);
        else
            respond(h->fd, "500 Internal Server Error", "text/plain", "out of memory\n");
        free(page);
    } else if (strncmp(h->in, "GET / ", 6) == 0) {
        respond(h->fd, "200 OK", "text/plain", "vgpu-mediatord: metrics at /metrics\n");
    } else {
        respond(h->fd, "404 Not Found", "text/plain", "vgpu-mediatord serves GET /metrics\n");
    }
    return false;
}
