/* BAR0 layout v1: create, validate, attach, account, reap.  See bar0.h. */
#define _GNU_SOURCE
#include "vgpu_backend/bar0.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(offsetof(struct vgpu_bar0, config) == 0x100, "config region at 0x100");
_Static_assert(offsetof(struct vgpu_bar0, status) == 0x1000, "status region at 0x1000");
_Static_assert(offsetof(struct vgpu_bar0, procs) == 0x2000, "process table at 0x2000");
_Static_assert(sizeof(struct vgpu_bar0_header) == 128, "header is 128 bytes");
_Static_assert(sizeof(struct vgpu_bar0_device_config) == 128, "device config is 128 bytes");
_Static_assert(sizeof(struct vgpu_bar0_proc) == 160, "process slot is 160 bytes");
_Static_assert(sizeof(_Atomic uint64_t) == 8 && sizeof(_Atomic uint32_t) == 4, "plain-sized atomics");

#define OWNER(pid, state) ((uint64_t)(pid) << 8 | (state))
#define OWNER_PID(o) ((int)((o) >> 8))
#define OWNER_STATE(o) ((int)((o)&0xff))

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Field 22 of /proc/PID/stat (after the parenthesised command name, which
 * may itself hold spaces and parentheses); *zombie set from field 3. */
static uint64_t stat_start_time(int pid, bool *zombie)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return 0;
    p += 2;
    if (zombie)
        *zombie = *p == 'Z' || *p == 'X';
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p)
            return 0;
        p++;
    }
    return strtoull(p, NULL, 10);
}

uint64_t vgpu_proc_start_time(int pid)
{
    return stat_start_time(pid, NULL);
}

/* Is the process that took a slot still running?  Unknown counts as alive:
 * returning a live process's memory would break the quota. */
static bool owner_alive(int pid, uint64_t start_time)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return false;
    bool zombie = false;
    uint64_t t = stat_start_time(pid, &zombie);
    if (t == 0)
        return access("/proc/self/stat", R_OK) != 0; /* no /proc here: trust kill() */
    return !zombie && t == start_time;
}

static void reap_slot(struct vgpu_bar0 *b, struct vgpu_bar0_proc *p, uint64_t owner)
{
    if (!atomic_compare_exchange_strong(&p->owner, &owner, OWNER(OWNER_PID(owner), VGPU_PROC_REAPING)))
        return; /* another process reaps it, or it changed */
    for (int d = 0; d < VGPU_MAX_DEVICES; d++) {
        uint64_t held = atomic_exchange(&p->held[d], 0);
        if (held)
            atomic_fetch_sub(&b->status.device[d].memory_used, held);
    }
    atomic_fetch_sub(&b->status.processes, 1);
    atomic_store(&p->owner, 0);
}

void vgpu_bar0_reap(struct vgpu_bar0 *b, bool force)
{
    uint64_t now = now_ns(), last = atomic_load_explicit(&b->status.last_reap_ns, memory_order_relaxed);
    if (!force && (now - last < 1000000000u ||
                   !atomic_compare_exchange_strong(&b->status.last_reap_ns, &last, now)))
        return;
    if (force)
        atomic_store(&b->status.last_reap_ns, now);
    for (int i = 0; i < VGPU_BAR0_MAX_PROCS; i++) {
        struct vgpu_bar0_proc *p = &b->procs[i];
        uint64_t o = atomic_load(&p->owner);
        if (OWNER_STATE(o) == VGPU_PROC_LIVE && !owner_alive(OWNER_PID(o), p->start_time))
            reap_slot(b, p, o);
    }
}

int vgpu_bar0_validate(const struct vgpu_bar0 *b, uint64_t file_size, char *err, size_t errlen)
{
    const struct vgpu_bar0_header *h = &b->header;
    if (h->magic != VGPU_BAR0_MAGIC)
        return fail(err, errlen, "not a vgpu BAR0 (magic 0x%016llx, want 0x%016llx)", (unsigned long long)h->magic,
                    (unsigned long long)VGPU_BAR0_MAGIC);
    if (h->version != VGPU_BAR0_VERSION)
        return fail(err, errlen, "BAR0 layout version %u; this vgpu reads version %u", h->version,
                    VGPU_BAR0_VERSION);
    if (h->header_size != sizeof(*h) || h->size != sizeof(struct vgpu_bar0) || h->size > file_size ||
        h->config_offset != offsetof(struct vgpu_bar0, config) ||
        h->status_offset != offsetof(struct vgpu_bar0, status) ||
        h->procs_offset != offsetof(struct vgpu_bar0, procs) || h->max_devices != VGPU_MAX_DEVICES ||
        h->max_procs != VGPU_BAR0_MAX_PROCS || h->proc_size != sizeof(struct vgpu_bar0_proc))
        return fail(err, errlen, "BAR0 header is inconsistent (size %llu of a %llu-byte file, regions at "
                    "0x%x/0x%x/0x%x): corrupt, or written by another layout",
                    (unsigned long long)h->size, (unsigned long long)file_size, h->config_offset, h->status_offset,
                    h->procs_offset);
    if (b->config.device_count > VGPU_MAX_DEVICES)
        return fail(err, errlen, "BAR0 config lists %u devices (at most %d): corrupt", b->config.device_count,
                    VGPU_MAX_DEVICES);
    for (uint32_t d = 0; d < b->config.device_count; d++) {
        const struct vgpu_bar0_device_config *c = &b->config.device[d];
        if (!memchr(c->physical, 0, sizeof(c->physical)) || !memchr(c->name, 0, sizeof(c->name)) ||
            c->compute_share == 0 || c->compute_share > 100)
            return fail(err, errlen, "BAR0 config of device %u is corrupt", d);
    }
    return 0;
}

static void write_config(struct vgpu_bar0 *b, const struct vgpu_bar0_config *want)
{
    b->config = *want;
    atomic_fetch_add(&b->header.config_generation, 1);
}

static void init_window(struct vgpu_bar0 *b, const struct vgpu_bar0_config *want)
{
    memset(b, 0, sizeof(*b));
    b->header.version = VGPU_BAR0_VERSION;
    b->header.header_size = sizeof(b->header);
    b->header.size = sizeof(*b);
    b->header.config_offset = offsetof(struct vgpu_bar0, config);
    b->header.status_offset = offsetof(struct vgpu_bar0, status);
    b->header.procs_offset = offsetof(struct vgpu_bar0, procs);
    b->header.max_devices = VGPU_MAX_DEVICES;
    b->header.max_procs = VGPU_BAR0_MAX_PROCS;
    b->header.proc_size = sizeof(struct vgpu_bar0_proc);
    write_config(b, want);
    /* Magic last: a reader that sees it sees a complete window. */
    __atomic_store_n(&b->header.magic, VGPU_BAR0_MAGIC, __ATOMIC_RELEASE);
}

static bool same_config(const struct vgpu_bar0_config *a, const struct vgpu_bar0_config *b)
{
    if (a->device_count != b->device_count || a->all_devices != b->all_devices)
        return false;
    for (uint32_t d = 0; d < a->device_count; d++)
        if (strcmp(a->device[d].physical, b->device[d].physical) != 0 ||
            a->device[d].memory_limit != b->device[d].memory_limit ||
            a->device[d].compute_share != b->device[d].compute_share)
            return false;
    return true;
}

static const char *describe(const struct vgpu_bar0_config *c, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t d = 0; d < c->device_count && n < len; d++) {
        char size[32];
        n += (size_t)snprintf(buf + n, len - n, "%sdevice %u = GPU %s, limit %s", d ? "; " : "", d,
                              c->device[d].physical,
                              c->device[d].memory_limit ? vgpu_format_size(c->device[d].memory_limit, size, sizeof(size))
                                                        : "none");
    }
    return c->device_count ? buf : "no devices";
}

static int reconcile(struct vgpu_bar0 *b, const struct vgpu_bar0_config *want, bool join, const char *path,
                     char *err, size_t errlen)
{
    if (join || same_config(&b->config, want))
        return 0;
    if (atomic_load(&b->status.processes) == 0) {
        write_config(b, want);
        return 0;
    }
    char have[1024], asked[1024];
    return fail(err, errlen,
                "vGPU %s is in use by %u process(es) with another configuration (%s) than this process asks for "
                "(%s); use the same VGPU_VISIBLE_DEVICES and VGPU_MEMORY_LIMIT, or another VGPU_BAR0",
                path, atomic_load(&b->status.processes), describe(&b->config, have, sizeof(have)),
                describe(want, asked, sizeof(asked)));
}

static int take_slot(struct vgpu_bar0 *b, const char *path, char *err, size_t errlen)
{
    int pid = getpid();
    uint64_t start = vgpu_proc_start_time(pid);
    for (int i = 0; i < VGPU_BAR0_MAX_PROCS; i++) {
        struct vgpu_bar0_proc *p = &b->procs[i];
        if (atomic_load(&p->owner) != 0)
            continue;
        /* The caller holds the file lock, so no other process claims this
         * slot; reapers skip it until it turns LIVE, after start_time. */
        p->start_time = start;
        for (int d = 0; d < VGPU_MAX_DEVICES; d++)
            atomic_store(&p->held[d], 0);
        atomic_fetch_add(&b->status.processes, 1);
        atomic_store(&p->owner, OWNER(pid, VGPU_PROC_LIVE));
        return i;
    }
    return fail(err, errlen, "vGPU %s has %d processes already, its most", path, VGPU_BAR0_MAX_PROCS);
}

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i])
            return false;
    return true;
}

int vgpu_bar0_attach(const char *path, const struct vgpu_bar0_config *want, bool join, struct vgpu_bar0_map *m,
                     char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    m->fd = -1;
    m->slot = -1;
    snprintf(m->path, sizeof(m->path), "%s", path);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return fail(err, errlen, "cannot open the vGPU's BAR0 %s: %s", path, strerror(errno));
    int rc = -1;
    struct vgpu_bar0 *b = MAP_FAILED;
    struct stat st;
    if (flock(fd, LOCK_EX) != 0 || fstat(fd, &st) != 0) {
        fail(err, errlen, "cannot lock the vGPU's BAR0 %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
        fail(err, errlen, "the vGPU's BAR0 %s is not a file", path);
        goto out;
    }
    bool fresh = st.st_size == 0;
    if (fresh && ftruncate(fd, sizeof(struct vgpu_bar0)) != 0) {
        fail(err, errlen, "cannot size the vGPU's BAR0 %s: %s", path, strerror(errno));
        goto out;
    }
    if (!fresh && (uint64_t)st.st_size < sizeof(struct vgpu_bar0)) {
        fail(err, errlen, "%s is not a vgpu BAR0: %lld bytes, a layout v%d window takes %zu", path,
             (long long)st.st_size, VGPU_BAR0_VERSION, sizeof(struct vgpu_bar0));
        goto out;
    }
    b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (b == MAP_FAILED) {
        fail(err, errlen, "cannot map the vGPU's BAR0 %s: %s", path, strerror(errno));
        goto out;
    }
    /* A zeroed window (new file, or a fresh ivshmem BAR) is initialised. */
    if (fresh || all_zero(b, sizeof(b->header))) {
        init_window(b, want);
    } else {
        char why[512];
        if (vgpu_bar0_validate(b, (uint64_t)st.st_size, why, sizeof(why)) != 0) {
            fail(err, errlen, "refusing the vGPU's BAR0 %s: %s; remove it (no process of this vGPU may be "
                 "running) or set VGPU_BAR0 to another path", path, why);
            goto out;
        }
        vgpu_bar0_reap(b, true);
        if (reconcile(b, want, join, path, err, errlen) != 0)
            goto out;
    }
    m->bar = b;
    m->fd = fd;
    m->pid = getpid();
    rc = 0;
out:
    flock(fd, LOCK_UN);
    if (rc != 0) {
        if (b != MAP_FAILED)
            munmap(b, sizeof(*b));
        close(fd);
    }
    return rc;
}

int vgpu_bar0_enter(struct vgpu_bar0_map *m, char *err, size_t errlen)
{
    /* Attaching and entering hold the file lock, so no two processes claim
     * one slot. */
    if (flock(m->fd, LOCK_EX) != 0)
        return fail(err, errlen, "cannot lock the vGPU's BAR0 %s: %s", m->path, strerror(errno));
    vgpu_bar0_reap(m->bar, true);
    m->slot = take_slot(m->bar, m->path, err, errlen);
    m->pid = getpid();
    flock(m->fd, LOCK_UN);
    return m->slot < 0 ? -1 : 0;
}

bool vgpu_bar0_take(struct vgpu_bar0_map *m, int dev, uint64_t bytes, uint64_t limit)
{
    _Atomic uint64_t *used = &m->bar->status.device[dev].memory_used;
    uint64_t u = atomic_load_explicit(used, memory_order_relaxed);
    do {
        if (limit && (u > limit || bytes > limit - u))
            return false;
    } while (!atomic_compare_exchange_weak(used, &u, u + bytes));
    if (m->slot >= 0)
        atomic_fetch_add(&m->bar->procs[m->slot].held[dev], bytes);
    return true;
}

void vgpu_bar0_take_anyway(struct vgpu_bar0_map *m, int dev, uint64_t bytes)
{
    atomic_fetch_add(&m->bar->status.device[dev].memory_used, bytes);
    if (m->slot >= 0)
        atomic_fetch_add(&m->bar->procs[m->slot].held[dev], bytes);
}

void vgpu_bar0_give(struct vgpu_bar0_map *m, int dev, uint64_t bytes)
{
    atomic_fetch_sub(&m->bar->status.device[dev].memory_used, bytes);
    if (m->slot >= 0)
        atomic_fetch_sub(&m->bar->procs[m->slot].held[dev], bytes);
}

void vgpu_bar0_detach(struct vgpu_bar0_map *m)
{
    if (!m->bar || m->slot < 0 || m->pid != getpid())
        return;
    struct vgpu_bar0_proc *p = &m->bar->procs[m->slot];
    uint64_t o = atomic_load(&p->owner);
    if (OWNER_PID(o) == m->pid && OWNER_STATE(o) == VGPU_PROC_LIVE)
        reap_slot(m->bar, p, o);
    m->slot = -1;
}

void vgpu_bar0_close(struct vgpu_bar0_map *m)
{
    if (m->bar)
        munmap(m->bar, sizeof(*m->bar));
    if (m->fd >= 0)
        close(m->fd);
    m->bar = NULL;
    m->fd = -1;
}
