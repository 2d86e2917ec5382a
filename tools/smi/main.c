/*
 * vgpu-smi: what vgpu-mediatord serves, as nvidia-smi shows GPUs: each
 * vGPU's devices, quota, use and compute share, what its share gave it and
 * what it used over the last interval, the processes in it, and the
 * processes the mediator's watch found outside their vGPU's bounds.
 *
 *   vgpu-smi [--socket PATH] [--json] [--watch [SECONDS]]
 *   vgpu-smi --calls PID [--json]   a remote guest's calls (calls.c)
 */
#define _GNU_SOURCE
#include "tools/lib/json_out.h"
#include "tools/smi/calls.h"
#include "tools/lib/mediator_query.h"
#include "common/contract/protocol/mediator_client.h"
#include "common/contract/protocol/protocol.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *to)
{
    fprintf(to, "usage: vgpu-smi [--socket PATH] [--json] [--watch [SECONDS]]\n"
                "       vgpu-smi --calls PID [--json]\n"
                "\n"
                "  --socket PATH      vgpu-mediatord's socket (default $VGPU_MEDIATOR_SOCKET, else %s)\n"
                "  --json             one JSON document (one per refresh with --watch)\n"
                "  --watch [SECONDS]  refresh every SECONDS (default 2) until interrupted\n"
                "  --calls PID        a remote guest's calls: how many crossed to its executor, the time\n"
                "                     they waited, how many were sent without waiting (no mediator asked)\n",
            VGPU_MEDIATOR_DEFAULT_SOCKET);
}

static char *mib(uint64_t bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%lluMiB", (unsigned long long)(bytes >> 20));
    return buf;
}

static void print_watch_table(const struct vgpu_msg *w);

/* COMPUTE's record of vGPU name's device d, or false (an older mediator: c NULL). */
static bool compute_device(const struct vgpu_msg *c, const char *name, uint32_t d, struct vgpu_compute_device *out)
{
    struct vgpu_compute_header h;
    if (!c)
        return false;
    vgpu_proto_compute_header(c, &h);
    for (uint32_t i = 0; i < h.ndevs; i++) {
        vgpu_proto_compute_device(c, i, out);
        if (out->device == d && strcmp(out->vgpu, name) == 0)
            return true;
    }
    return false;
}

/* Process pid's utilization on vGPU name's device d, in permille, or -1 where it is not known. */
static int process_utilization(const struct vgpu_msg *c, const char *name, uint32_t pid, uint32_t d)
{
    struct vgpu_compute_header h;
    if (!c)
        return -1;
    vgpu_proto_compute_header(c, &h);
    for (uint32_t i = 0; i < h.nprocs; i++) {
        struct vgpu_compute_proc p;
        vgpu_proto_compute_proc(c, i, &p);
        if (p.pid == pid && p.device == d && strcmp(p.vgpu, name) == 0)
            return p.flags & VGPU_COMPUTE_MEASURED ? (int)p.utilization : -1;
    }
    return -1;
}

static const char *const mode_keys[] = { "none", "share", "cap" };

/* "47%", or "-" where it is not known. */
static char *percent(bool known, uint32_t permille, char *buf, size_t len)
{
    if (known)
        snprintf(buf, len, "%u%%", (permille + 5) / 10);
    else
        snprintf(buf, len, "-");
    return buf;
}

static void print_compute_table(const struct vgpu_msg *m, const struct vgpu_msg *c)
{
    if (!c) {
        printf("\nCompute: this vgpu-mediatord does not say (it is older than this vgpu-smi)\n");
        return;
    }
    struct vgpu_status_header h;
    struct vgpu_compute_header ch;
    vgpu_proto_status_header(m, &h);
    vgpu_proto_compute_header(c, &ch);
    if (ch.interval_ms)
        printf("\nCompute over the last %.1f s (Held: the GPU time its share gave it; Util: what its processes "
               "used, as the driver samples them):\n", ch.interval_ms / 1e3);
    else
        printf("\nCompute (not measured yet: the first interval is under way):\n");
    printf("%-16s %-4s %-4s %6s %-6s %-6s %10s %6s %6s\n", "vGPU", "Dev", "GPU", "Share", "Mode", "Holds", "GPU time",
           "Held", "Util");
    for (uint32_t i = 0; i < h.nvgpus; i++) {
        struct vgpu_status_vgpu v;
        vgpu_proto_status_vgpu(m, i, &v);
        for (uint32_t d = 0; d < v.ndev; d++) {
            struct vgpu_compute_device r;
            if (!compute_device(c, v.name, d, &r))
                continue;
            bool arbitrated = r.flags & VGPU_COMPUTE_ARBITRATED;
            char gpu[16] = "-", busy[32] = "-", held[16], util[16];
            if (r.gpu != UINT32_MAX)
                snprintf(gpu, sizeof(gpu), "%u", r.gpu);
            if (arbitrated || r.busy_ns)
                snprintf(busy, sizeof(busy), "%.2fs", (double)r.busy_ns / 1e9);
            printf("%-16s %-4u %-4s %5u%% %-6s %-6s %10s %6s %6s\n", d ? "" : v.name, d, gpu, r.share,
                   mode_keys[r.mode],
                   !arbitrated                        ? "-"
                   : r.flags & VGPU_COMPUTE_HOLDING ? "yes"
                   : r.flags & VGPU_COMPUTE_BESIDE  ? "beside"
                                                    : "no",
                   busy,
                   percent(arbitrated && ch.interval_ms, r.held, held, sizeof(held)),
                   percent(r.flags & VGPU_COMPUTE_MEASURED, r.utilization, util, sizeof(util)));
        }
    }
}

static void print_table(const struct vgpu_msg *m, const struct vgpu_msg *w, const struct vgpu_msg *c,
                        const char *socket)
{
    struct vgpu_status_header h;
    vgpu_proto_status_header(m, &h);
    printf("vgpu-mediatord %s at %s (start %u), %u vGPU(s), %u process(es), %llu refused\n\n", h.version, socket,
           h.epoch, h.nvgpus, h.nprocs, (unsigned long long)h.refused_admissions);
    printf("%-16s %-4s %-42s %22s %8s %8s\n", "vGPU", "Dev", "GPU", "Memory used / quota", "Compute", "Refused");
    for (uint32_t i = 0; i < h.nvgpus; i++) {
        struct vgpu_status_vgpu v;
        vgpu_proto_status_vgpu(m, i, &v);
        char label[64];
        snprintf(label, sizeof(label), "%s%s", v.name,
                 v.flags & VGPU_STATUS_WINDOW_LOST ? " (VM, window lost)"
                 : v.flags & VGPU_STATUS_GUEST    ? " (VM)"
                 : v.flags & VGPU_STATUS_RETIRED  ? " (retired)"
                                                  : "");
        for (uint32_t d = 0; d < v.ndev; d++) {
            char gpu[96], used[32], quota[32], mem[72];
            snprintf(gpu, sizeof(gpu), "%.24s %.13s...", v.dev[d].gpu_name, v.dev[d].uuid);
            uint64_t limit = v.dev[d].limit ? v.dev[d].limit : v.dev[d].physical_total;
            snprintf(mem, sizeof(mem), "%s / %s", mib(v.dev[d].used, used, sizeof(used)),
                     mib(limit, quota, sizeof(quota)));
            printf("%-16s %-4u %-42s %22s %7u%% %8llu\n", d ? "" : label, d, gpu, mem, v.dev[d].compute,
                   (unsigned long long)v.dev[d].refusals);
        }
        if (v.ndev == 0)
            printf("%-16s (no devices)\n", label);
    }
    print_compute_table(m, c);
    printf("\nProcesses:\n%-16s %-8s %-12s %-16s %-4s %12s %6s\n", "vGPU", "PID", "User", "Command", "Dev", "Memory",
           "Util");
    if (h.nprocs == 0)
        printf("  none\n");
    for (uint32_t i = 0; i < h.nprocs; i++) {
        struct vgpu_status_proc p;
        struct vgpu_status_vgpu v;
        vgpu_proto_status_proc(m, i, &p);
        vgpu_proto_status_vgpu(m, p.vgpu, &v);
        bool shown = false;
        for (uint32_t d = 0; d < v.ndev; d++) {
            char used[32], util[16];
            if (!p.held[d] && (shown || d + 1 < v.ndev))
                continue;
            int u = process_utilization(c, v.name, p.pid, d);
            printf("%-16s %-8u %-12.12s %-16.16s %-4u %12s %6s\n", v.name, p.pid, p.user, p.comm, d,
                   mib(p.held[d], used, sizeof(used)), percent(u >= 0, (uint32_t)u, util, sizeof(util)));
            shown = true;
        }
    }
    print_watch_table(w);
}

static const char *const rule_names[] = { "?", "unadmitted", "over quota", "vGPU over quota", "over share" };
static const char *const rule_keys[] = { "?", "unadmitted", "over_quota", "vgpu_over_quota", "over_share" };

static bool known(uint64_t bytes)
{
    return bytes != UINT64_MAX; /* NVML would not say */
}

/* "every 500 ms on GPU 0, 1; tolerance 64MiB + 2% of the quota" */
static void describe_watch(const struct vgpu_watch_header *h, char *out, size_t len)
{
    char gpus[256] = "";
    size_t n = 0;
    for (unsigned i = 0; i < 64 && n < sizeof(gpus); i++)
        if (h->gpus >> i & 1)
            n += (size_t)snprintf(gpus + n, sizeof(gpus) - n, "%s%u", n ? ", " : "", i);
    if (!h->interval_ms)
        snprintf(out, len, "off (watch_interval = 0)");
    else
        snprintf(out, len, "GPU %s every %u ms; tolerance %lluMiB + %u%% of the quota; unadmitted processes are %s",
                 n ? gpus : "(none)", h->interval_ms, (unsigned long long)(h->tolerance_bytes >> 20),
                 h->tolerance_percent, h->flags & VGPU_WATCH_KILL_UNADMITTED ? "killed" : "reported");
}

static void print_watch_table(const struct vgpu_msg *w)
{
    if (!w) {
        printf("\nWatch: this vgpu-mediatord has none (it is older than this vgpu-smi)\n");
        return;
    }
    struct vgpu_watch_header h;
    vgpu_proto_watch_header(w, &h);
    char about[384];
    describe_watch(&h, about, sizeof(about));
    printf("\nWatch: %s\n%-16s %-8s %-12s %-16s %-4s %12s %12s %-16s %s\n", about, "Rule", "PID", "User", "Command",
           "GPU", "Memory", "Quota", "vGPU", "Seen");
    if (h.ncases == 0)
        printf("  none\n");
    for (uint32_t i = 0; i < h.ncases; i++) {
        struct vgpu_watch_case c;
        vgpu_proto_watch_case(w, i, &c);
        char used[32] = "?", quota[32] = "-";
        if (c.rule == VGPU_WATCH_OVER_SHARE) { /* its utilization, against its vGPU's share */
            snprintf(used, sizeof(used), "%.1f%%", (double)c.used / 10);
            snprintf(quota, sizeof(quota), "share %.0f%%", (double)c.quota / 10);
        } else {
            if (known(c.used))
                mib(c.used, used, sizeof(used));
            if (c.quota)
                mib(c.quota, quota, sizeof(quota));
        }
        printf("%-16s %-8u %-12.12s %-16.16s %-4u %12s %12s %-16s %.1fs%s\n", rule_names[c.rule], c.pid, c.user,
               c.comm, c.gpu, used, quota, c.vgpu[0] ? c.vgpu : "-", c.seen_ms / 1e3,
               c.flags & VGPU_WATCH_KILLED ? "  killed" : "");
    }
}

static void json_bytes(uint64_t bytes, bool present)
{
    if (present)
        printf("%llu", (unsigned long long)bytes);
    else
        printf("null");
}

static void print_watch_json(const struct vgpu_msg *w)
{
    if (!w) {
        printf("null");
        return;
    }
    struct vgpu_watch_header h;
    vgpu_proto_watch_header(w, &h);
    printf("{\"interval_ms\":%u,\"gpus\":[", h.interval_ms);
    for (unsigned i = 0, n = 0; i < 64; i++)
        if (h.gpus >> i & 1)
            printf("%s%u", n++ ? "," : "", i);
    printf("],\"tolerance_bytes\":%llu,\"tolerance_percent\":%u,\"enforce_unadmitted\":\"%s\",\"readings\":%llu,"
           "\"kills\":%llu,\"processes\":[",
           (unsigned long long)h.tolerance_bytes, h.tolerance_percent,
           h.flags & VGPU_WATCH_KILL_UNADMITTED ? "kill" : "report", (unsigned long long)h.readings,
           (unsigned long long)h.kills);
    for (uint32_t i = 0; i < h.ncases; i++) {
        struct vgpu_watch_case c;
        vgpu_proto_watch_case(w, i, &c);
        printf("%s{\"rule\":\"%s\",\"pid\":%u,\"uid\":", i ? "," : "", rule_keys[c.rule], c.pid);
        json_bytes(c.uid, c.uid != UINT32_MAX);
        printf(",\"user\":");
        vgpu_json_string(stdout, c.user);
        printf(",\"command\":");
        vgpu_json_string(stdout, c.comm);
        printf(",\"gpu\":%u,\"uuid\":", c.gpu);
        vgpu_json_string(stdout, c.uuid);
        bool share = c.rule == VGPU_WATCH_OVER_SHARE;
        printf(",\"memory\":");
        json_bytes(c.used, !share && known(c.used));
        printf(",\"quota\":");
        json_bytes(c.quota, !share && c.quota != 0);
        if (share)
            printf(",\"utilization_percent\":%.1f,\"share_percent\":%.1f", (double)c.used / 10, (double)c.quota / 10);
        else
            printf(",\"utilization_percent\":null,\"share_percent\":null");
        printf(",\"vgpu\":");
        if (c.vgpu[0])
            vgpu_json_string(stdout, c.vgpu);
        else
            printf("null");
        printf(",\"vgpu_memory\":");
        json_bytes(c.vgpu_used, c.rule == VGPU_WATCH_VGPU_OVER_QUOTA);
        printf(",\"seconds\":%.3f,\"reported_seconds\":%.3f,\"enforce\":\"%s\",\"killed\":%s}", c.seen_ms / 1e3,
               c.reported_ms / 1e3,
               c.flags & VGPU_WATCH_KILL ? "kill" : "report", c.flags & VGPU_WATCH_KILLED ? "true" : "false");
    }
    printf("]}");
}

/* A device's "compute_use": what its share gave it and what it used; null from an older mediator. */
static void print_compute_use_json(const struct vgpu_msg *c, const char *name, uint32_t d)
{
    struct vgpu_compute_device r;
    struct vgpu_compute_header h;
    if (!compute_device(c, name, d, &r)) {
        printf("null");
        return;
    }
    vgpu_proto_compute_header(c, &h);
    bool arbitrated = r.flags & VGPU_COMPUTE_ARBITRATED;
    printf("{\"mode\":\"%s\",\"arbitrated\":%s,\"holding\":%s,\"beside_holder\":%s,\"busy_ns\":%llu,"
           "\"launch_ms\":%llu,\"held_percent\":",
           mode_keys[r.mode], arbitrated ? "true" : "false", r.flags & VGPU_COMPUTE_HOLDING ? "true" : "false",
           r.flags & VGPU_COMPUTE_BESIDE ? "true" : "false",
           (unsigned long long)r.busy_ns, (unsigned long long)r.launch_ms);
    if (arbitrated && h.interval_ms)
        printf("%.1f", r.held / 10.0);
    else
        printf("null");
    printf(",\"utilization_percent\":");
    if (r.flags & VGPU_COMPUTE_MEASURED)
        printf("%.1f}", r.utilization / 10.0);
    else
        printf("null}");
}

static void print_json(const struct vgpu_msg *m, const struct vgpu_msg *w, const struct vgpu_msg *c,
                       const char *socket)
{
    struct vgpu_status_header h;
    vgpu_proto_status_header(m, &h);
    printf("{\"mediator\":{\"version\":");
    vgpu_json_string(stdout, h.version);
    printf(",\"socket\":");
    vgpu_json_string(stdout, socket);
    printf(",\"start\":%u,\"refused_admissions\":%llu,\"compute_interval_ms\":", h.epoch,
           (unsigned long long)h.refused_admissions);
    if (c) {
        struct vgpu_compute_header ch;
        vgpu_proto_compute_header(c, &ch);
        printf("%u", ch.interval_ms);
    } else {
        printf("null");
    }
    printf("},\"vgpus\":[");
    for (uint32_t i = 0; i < h.nvgpus; i++) {
        struct vgpu_status_vgpu v;
        vgpu_proto_status_vgpu(m, i, &v);
        printf("%s{\"name\":", i ? "," : "");
        vgpu_json_string(stdout, v.name);
        printf(",\"guest\":%s,\"retired\":%s,\"window_lost\":%s,\"processes\":%u,\"refused_admissions\":%llu,"
               "\"devices\":[",
               v.flags & VGPU_STATUS_GUEST ? "true" : "false", v.flags & VGPU_STATUS_RETIRED ? "true" : "false",
               v.flags & VGPU_STATUS_WINDOW_LOST ? "true" : "false", v.processes,
               (unsigned long long)v.refused_admissions);
        for (uint32_t d = 0; d < v.ndev; d++) {
            printf("%s{\"index\":%u,\"uuid\":", d ? "," : "", d);
            vgpu_json_string(stdout, v.dev[d].uuid);
            printf(",\"gpu\":");
            vgpu_json_string(stdout, v.dev[d].gpu_name);
            printf(",\"memory_total\":%llu,\"memory_quota\":%llu,\"memory_used\":%llu,\"refusals\":%llu,"
                   "\"compute\":%u,\"compute_use\":",
                   (unsigned long long)v.dev[d].physical_total,
                   (unsigned long long)(v.dev[d].limit ? v.dev[d].limit : v.dev[d].physical_total),
                   (unsigned long long)v.dev[d].used, (unsigned long long)v.dev[d].refusals, v.dev[d].compute);
            print_compute_use_json(c, v.name, d);
            printf("}");
        }
        printf("]}");
    }
    printf("],\"processes\":[");
    for (uint32_t i = 0; i < h.nprocs; i++) {
        struct vgpu_status_proc p;
        struct vgpu_status_vgpu v;
        vgpu_proto_status_proc(m, i, &p);
        vgpu_proto_status_vgpu(m, p.vgpu, &v);
        printf("%s{\"vgpu\":", i ? "," : "");
        vgpu_json_string(stdout, v.name);
        printf(",\"pid\":%u,\"uid\":", p.pid);
        if (p.uid == UINT32_MAX)
            printf("null");
        else
            printf("%u", p.uid);
        printf(",\"user\":");
        vgpu_json_string(stdout, p.user);
        printf(",\"command\":");
        vgpu_json_string(stdout, p.comm);
        printf(",\"slot\":%u,\"memory\":[", p.slot);
        for (uint32_t d = 0; d < v.ndev; d++)
            printf("%s%llu", d ? "," : "", (unsigned long long)p.held[d]);
        printf("],\"utilization_percent\":[");
        for (uint32_t d = 0; d < v.ndev; d++) {
            int u = process_utilization(c, v.name, p.pid, d);
            if (u >= 0)
                printf("%s%.1f", d ? "," : "", u / 10.0);
            else
                printf("%snull", d ? "," : "");
        }
        printf("]}");
    }
    printf("],\"watch\":");
    print_watch_json(w);
    printf("}\n");
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "socket", required_argument, NULL, 's' }, { "json", no_argument, NULL, 'j' },
        { "watch", optional_argument, NULL, 'w' },  { "version", no_argument, NULL, 'V' },
        { "help", no_argument, NULL, 'h' },         { "calls", required_argument, NULL, 'c' },
        { NULL, 0, NULL, 0 },
    };
    const char *socket = getenv("VGPU_MEDIATOR_SOCKET");
    bool json = false;
    double every = 0;
    int opt, calls = 0;
    if (!socket || !*socket)
        socket = VGPU_MEDIATOR_DEFAULT_SOCKET;
    while ((opt = getopt_long(argc, argv, "s:jw::Vhc:", options, NULL)) != -1) {
        switch (opt) {
        case 's': socket = optarg; break;
        case 'j': json = true; break;
        case 'w':
            /* "--watch 5" as well as "--watch=5". */
            if (!optarg && optind < argc && argv[optind][0] >= '0' && argv[optind][0] <= '9')
                optarg = argv[optind++];
            every = optarg ? atof(optarg) : 2;
            if (every <= 0) {
                fprintf(stderr, "vgpu-smi: --watch takes a positive number of seconds\n");
                return 2;
            }
            break;
        case 'c':
            calls = atoi(optarg);
            if (calls <= 0) {
                fprintf(stderr, "vgpu-smi: --calls takes a process id\n");
                return 2;
            }
            break;
        case 'V': puts("vgpu-smi " VGPU_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    if (calls)
        return vgpu_smi_calls(calls, json);
    char err[512];
    int fd = vgpu_tool_dial(socket, err, sizeof(err));
    if (fd < 0) {
        fprintf(stderr, "vgpu-smi: %s\n", err);
        return 1;
    }
    uint8_t *buf = NULL, *wbuf = NULL, *cbuf = NULL;
    size_t cap = 0, wcap = 0, ccap = 0;
    for (;;) {
        struct vgpu_msg m, w, c;
        struct vgpu_status_header h;
        if (vgpu_tool_status(fd, socket, &buf, &cap, &m, err, sizeof(err)) != 0) {
            fprintf(stderr, "vgpu-smi: %s\n", err);
            return 1;
        }
        vgpu_proto_status_header(&m, &h);
        bool watch = h.features & VGPU_STATUS_HAS_WATCH;
        if (watch && vgpu_tool_watch(fd, socket, &wbuf, &wcap, &w, err, sizeof(err)) != 0) {
            fprintf(stderr, "vgpu-smi: %s\n", err);
            return 1;
        }
        bool compute = h.features & VGPU_STATUS_HAS_COMPUTE;
        if (compute && vgpu_tool_compute(fd, socket, &cbuf, &ccap, &c, err, sizeof(err)) != 0) {
            fprintf(stderr, "vgpu-smi: %s\n", err);
            return 1;
        }
        if (every > 0 && !json)
            printf("\033[H\033[2J");
        if (json)
            print_json(&m, watch ? &w : NULL, compute ? &c : NULL, socket);
        else
            print_table(&m, watch ? &w : NULL, compute ? &c : NULL, socket);
        fflush(stdout);
        if (every <= 0)
            break;
        usleep((useconds_t)(every * 1e6));
    }
    free(buf);
    free(wbuf);
    free(cbuf);
    close(fd);
    return 0;
}
