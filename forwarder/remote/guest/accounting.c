/*
 * What a guest's calls cost (accounting.h): the record of
 * common/contract/window/calls_page.h, kept in a memfd this process maps.
 */
#define _GNU_SOURCE
#include "forwarder/remote/guest/accounting.h"

#include "common/clock.h"
#include "common/contract/window/calls_page.h"
#include "common/log.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The record, mapped: set once under the client's lock, read by any
 * thread (atomically); its counters are added to atomically.  fd is kept
 * open so that vgpu-smi finds it in /proc/PID/fd. */
static struct vgpu_calls_header *record;
static size_t record_size;
static unsigned record_slots; /* the record's, kept here: its header is another process's to write too */
static int record_fd = -1;
static bool summary_registered;

static struct vgpu_calls_slot *slot_of(unsigned slot)
{
    struct vgpu_calls_header *h = __atomic_load_n(&record, __ATOMIC_ACQUIRE);
    return h && slot < record_slots ? vgpu_calls_page_slot(h, slot) : NULL;
}

void vgpu_remote_account_crossed(unsigned slot, uint64_t wait_ns, size_t bytes)
{
    struct vgpu_calls_slot *s = slot_of(slot);
    if (!s)
        return;
    __atomic_add_fetch(&s->crossed, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->wait_ns, wait_ns, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->bytes, bytes, __ATOMIC_RELAXED);
}

void vgpu_remote_account_sent(unsigned slot, size_t bytes, uint64_t full_ns)
{
    struct vgpu_calls_slot *s = slot_of(slot);
    if (!s)
        return;
    __atomic_add_fetch(&s->sent, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->bytes, bytes, __ATOMIC_RELAXED);
    if (full_ns)
        __atomic_add_fetch(&s->full_ns, full_ns, __ATOMIC_RELAXED);
}

static int by_wait(const void *a, const void *b)
{
    const struct vgpu_calls_slot *x = *(const struct vgpu_calls_slot *const *)a,
                                 *y = *(const struct vgpu_calls_slot *const *)b;
    if (x->wait_ns != y->wait_ns)
        return x->wait_ns < y->wait_ns ? 1 : -1;
    return x->sent < y->sent ? 1 : x->sent > y->sent ? -1 : 0;
}

/* VGPU_TRACE=summary, at exit: the calls that crossed or were sent, the
 * longest waited first, and their totals. */
static void summary(void)
{
    struct vgpu_calls_header *h = __atomic_load_n(&record, __ATOMIC_ACQUIRE);
    if (!h || h->pid != getpid())
        return;
    const struct vgpu_calls_slot **used = calloc(record_slots ? record_slots : 1, sizeof(*used));
    if (!used)
        return;
    unsigned n = 0;
    uint64_t crossed = 0, sent = 0, wait_ns = 0, bytes = 0, full_ns = 0;
    for (unsigned i = 0; i < record_slots; i++) {
        const struct vgpu_calls_slot *s = vgpu_calls_page_slot(h, i);
        if (!s->crossed && !s->sent)
            continue;
        used[n++] = s;
        crossed += s->crossed;
        sent += s->sent;
        wait_ns += s->wait_ns;
        bytes += s->bytes;
        full_ns += s->full_ns;
    }
    qsort(used, n, sizeof(*used), by_wait);
    double run_s = (double)(vgpu_now_ns() - h->started_ns) / 1e9;
    vgpu_trace_summary_line("vgpu-calls[%d] %s to %.*s over %.3f s: %llu crossed (waited %.3f s), %llu sent "
                            "(waited %.3f s for room), %.1f MiB",
                            (int)h->pid, h->library ? "NVML" : "CUDA", (int)sizeof(h->where), h->where, run_s,
                            (unsigned long long)crossed, (double)wait_ns / 1e9, (unsigned long long)sent,
                            (double)full_ns / 1e9, (double)bytes / (1 << 20));
    for (unsigned i = 0; i < n; i++)
        vgpu_trace_summary_line("vgpu-calls[%d] %-44.*s crossed %10llu  waited %10.3f ms  (%8.2f us each)  "
                                "sent %10llu  full %8.3f ms",
                                (int)h->pid, VGPU_CALLS_PAGE_NAME_LEN, used[i]->name,
                                (unsigned long long)used[i]->crossed,
                                (double)used[i]->wait_ns / 1e6,
                                used[i]->crossed ? (double)used[i]->wait_ns / 1e3 / (double)used[i]->crossed : 0.0,
                                (unsigned long long)used[i]->sent, (double)used[i]->full_ns / 1e6);
    free(used);
}

void vgpu_remote_account_open(const char *where, unsigned library, const char *const *names, unsigned count)
{
    if (__atomic_load_n(&record, __ATOMIC_ACQUIRE))
        return;
    unsigned slots = count < VGPU_CALLS_PAGE_MAX_SLOTS ? count : VGPU_CALLS_PAGE_MAX_SLOTS;
    size_t size = sizeof(struct vgpu_calls_header) + (size_t)slots * sizeof(struct vgpu_calls_slot);
    int fd = memfd_create(vgpu_calls_page_name(library), MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return;
    /* Sealed at its size: no one shrinks it under the mapping. */
    void *p = ftruncate(fd, (off_t)size) == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0
                  ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    if (p == MAP_FAILED) {
        close(fd);
        return;
    }
    struct vgpu_calls_header *h = p;
    h->magic = VGPU_CALLS_PAGE_MAGIC;
    h->version = VGPU_CALLS_PAGE_VERSION;
    h->library = library;
    h->slots = slots;
    h->pid = getpid();
    h->started_ns = vgpu_now_ns();
    snprintf(h->where, sizeof(h->where), "%s", where);
    for (unsigned i = 0; i < slots; i++)
        snprintf(vgpu_calls_page_slot(h, i)->name, VGPU_CALLS_PAGE_NAME_LEN, "%s", names[i]);
    record_fd = fd;
    record_size = size;
    record_slots = slots;
    __atomic_store_n(&record, h, __ATOMIC_RELEASE);
    if (vgpu_trace_summary_enabled() && !summary_registered) {
        summary_registered = true;
        atexit(summary);
    }
}

void vgpu_remote_account_forget(void)
{
    struct vgpu_calls_header *h = __atomic_exchange_n(&record, NULL, __ATOMIC_ACQ_REL);
    if (h)
        munmap(h, record_size);
    if (record_fd >= 0)
        close(record_fd);
    record_fd = -1;
}
