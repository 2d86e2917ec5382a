/*
 * vgpu-smi --calls PID: a remote guest's record of its calls
 * (common/contract/window/calls_page.h), read through /proc/PID/fd: per
 * call, how many crossed to the executor and waited, how many were sent
 * without waiting, the time waited, and the time sends waited for room in
 * a full ring (the executor behind them); the longest waited first.
 */
#include "tools/smi/calls.h"

#include "common/clock.h"
#include "common/contract/window/calls_page.h"
#include "tools/lib/json_out.h"
#include "tools/lib/terminal_safe.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_wait(const void *a, const void *b)
{
    const struct vgpu_calls_slot *x = *(const struct vgpu_calls_slot *const *)a,
                                 *y = *(const struct vgpu_calls_slot *const *)b;
    if (x->wait_ns != y->wait_ns)
        return x->wait_ns < y->wait_ns ? 1 : -1;
    return x->sent < y->sent ? 1 : x->sent > y->sent ? -1 : 0;
}

/* The slots that were used, the longest waited first; their count in *n. */
static struct vgpu_calls_slot **used_slots(struct vgpu_calls_header *h, unsigned *n)
{
    struct vgpu_calls_slot **used = calloc(h->slots ? h->slots : 1, sizeof(*used));
    *n = 0;
    if (!used)
        return NULL;
    vgpu_terminal_safe(h->where);
    for (unsigned i = 0; i < h->slots; i++) {
        struct vgpu_calls_slot *s = vgpu_calls_page_slot(h, i);
        if (s->crossed || s->sent) {
            vgpu_terminal_safe(s->name); /* another process's words, maybe another user's */
            used[(*n)++] = s;
        }
    }
    qsort(used, *n, sizeof(*used), by_wait);
    return used;
}

static void print_table(struct vgpu_calls_header *h)
{
    unsigned n;
    struct vgpu_calls_slot **used = used_slots(h, &n);
    uint64_t crossed = 0, sent = 0, wait_ns = 0;
    for (unsigned i = 0; i < n; i++) {
        crossed += used[i]->crossed;
        sent += used[i]->sent;
        wait_ns += used[i]->wait_ns;
    }
    printf("%s calls of process %d to %s, over %.1f s: %llu crossed (waited %.3f s), %llu sent\n",
           h->library ? "NVML" : "CUDA", (int)h->pid, h->where, (double)(vgpu_now_ns() - h->started_ns) / 1e9,
           (unsigned long long)crossed, (double)wait_ns / 1e9, (unsigned long long)sent);
    printf("%-44s %12s %12s %10s %12s %12s\n", "Call", "Crossed", "Waited ms", "us each", "Sent", "Full ms");
    for (unsigned i = 0; i < n; i++)
        printf("%-44s %12llu %12.3f %10.2f %12llu %12.3f\n", used[i]->name, (unsigned long long)used[i]->crossed,
               (double)used[i]->wait_ns / 1e6,
               used[i]->crossed ? (double)used[i]->wait_ns / 1e3 / (double)used[i]->crossed : 0.0,
               (unsigned long long)used[i]->sent, (double)used[i]->full_ns / 1e6);
    free(used);
}

static void print_json(struct vgpu_calls_header *h)
{
    unsigned n;
    struct vgpu_calls_slot **used = used_slots(h, &n);
    printf("{\"library\":\"%s\",\"pid\":%d,\"executor\":", h->library ? "nvml" : "cuda", (int)h->pid);
    vgpu_json_string(stdout, h->where);
    printf(",\"seconds\":%.3f,\"calls\":[", (double)(vgpu_now_ns() - h->started_ns) / 1e9);
    for (unsigned i = 0; i < n; i++) {
        printf("%s{\"name\":", i ? "," : "");
        vgpu_json_string(stdout, used[i]->name);
        printf(",\"crossed\":%llu,\"sent\":%llu,\"wait_ns\":%llu,\"full_ns\":%llu,\"bytes\":%llu}",
               (unsigned long long)used[i]->crossed, (unsigned long long)used[i]->sent,
               (unsigned long long)used[i]->wait_ns, (unsigned long long)used[i]->full_ns,
               (unsigned long long)used[i]->bytes);
    }
    printf("]}");
    free(used);
}

int vgpu_smi_calls(int pid, bool json)
{
    struct vgpu_calls_header *rec[2] = { NULL, NULL };
    int why[2];
    for (unsigned lib = 0; lib < 2; lib++)
        why[lib] = vgpu_calls_page_read(pid, lib, &rec[lib]);
    if (!rec[0] && !rec[1]) {
        int e = why[0] != -ENOENT ? -why[0] : -why[1];
        if (e == ENOENT)
            fprintf(stderr, "vgpu-smi: process %d keeps no record of remote calls: it is not a remote guest, or has "
                            "made no CUDA or NVML call yet (or it has exited)\n", pid);
        else if (e == EACCES || e == EPERM)
            fprintf(stderr, "vgpu-smi: process %d's descriptors are not this user's to read: run as its user or "
                            "root\n", pid);
        else if (e == EPROTO)
            fprintf(stderr, "vgpu-smi: process %d's record of its calls is of another vgpu version than this "
                            "vgpu-smi's\n", pid);
        else
            fprintf(stderr, "vgpu-smi: cannot read process %d's descriptors: %s\n", pid, strerror(e));
        return 1;
    }
    if (json)
        printf("{\"pid\":%d,\"libraries\":[", pid);
    for (unsigned lib = 0, shown = 0; lib < 2; lib++) {
        if (!rec[lib])
            continue;
        if (json) {
            printf("%s", shown ? "," : "");
            print_json(rec[lib]);
        } else {
            printf("%s", shown ? "\n" : "");
            print_table(rec[lib]);
        }
        shown++;
        free(rec[lib]);
    }
    if (json)
        printf("]}\n");
    return 0;
}
