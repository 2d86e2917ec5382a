/* Standalone vGPUs' shared arbiter page; see sched_page.h. */
#define _GNU_SOURCE
#include "common/contract/arbiter/sched_page.h"

#include "common/error.h"
#include "common/log.h"
#include "common/contract/arbiter/futex.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(struct vgpu_sched_page) <= 8192, "the page is two pages at most");
/* taken[] took the place of reserved words: the state where version 3 has it. */
_Static_assert(offsetof(struct vgpu_sched_page, state) == 72, "the state where version 3 has it");

/* A spin lock whose holder's pid lets others break it when that process
 * died: steps take microseconds, and a process can die in one. */
static void lock(struct vgpu_sched_page *p)
{
    uint32_t me = (uint32_t)getpid(), held = 0;
    for (unsigned spins = 0; !atomic_compare_exchange_weak(&p->lock, &held, me); spins++) {
        if (held && spins % 1024 == 1023 && kill((pid_t)held, 0) != 0 && errno == ESRCH)
            atomic_compare_exchange_strong(&p->lock, &held, 0);
        held = 0;
        if (spins > 64)
            sched_yield();
        else
            __builtin_ia32_pause();
    }
}

static void unlock(struct vgpu_sched_page *p)
{
    atomic_store_explicit(&p->lock, 0, memory_order_release);
}

/* An entry idle this long may give its slot to a new vGPU when the page is
 * full (it takes one again when it comes back, a quantum behind the others
 * at most, as from any idle spell). */
#define EVICT_IDLE_NS 1000000000ull

/* The entry idle longest, past EVICT_IDLE_NS, with no thread counted waiting; -1 if none. */
static int evictable(const struct vgpu_sched_page *p, uint64_t now)
{
    int best = -1;
    uint64_t oldest = UINT64_MAX;
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
        uint64_t active = atomic_load(&p->who[i].active_ns);
        if (i == p->state.holder || atomic_load(&p->who[i].waiting) > p->who[i].demand.waiting_floor ||
            atomic_load(&p->who[i].running) > p->who[i].demand.running_floor || active >= now ||
            now - active < EVICT_IDLE_NS || active >= oldest)
            continue;
        best = i;
        oldest = active;
    }
    return best;
}

/* The entry of (dev, ino, vdev), or a new one; -1 when the page is full. */
static int take_entry(struct vgpu_sched_page *p, uint64_t dev, uint64_t ino, uint32_t vdev, uint32_t share,
                      uint32_t mode, uint64_t now)
{
    int free_slot = -1;
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
        if (p->state.e[i].used && p->who[i].dev == dev && p->who[i].ino == ino && p->who[i].vdev == vdev) {
            /* Its earlier processes may have left it holding the GPU, and
             * nobody stepped since: the time since its last launch was
             * nobody's use, and must not be charged to the process that
             * now takes the entry (a cap would owe it for minutes). */
            uint64_t active = atomic_load(&p->who[i].active_ns);
            if (p->state.holder == i && now > active && now - active > VGPU_SCHED_IDLE_NS && p->state.granted_ns < now)
                p->state.granted_ns = now;
            /* Not stale any longer: a step must not drop the entry just taken. */
            if (active < now)
                atomic_store(&p->who[i].active_ns, now);
            vgpu_sched_set(&p->state, i, share, mode, now);
            return i;
        }
        if (!p->state.e[i].used && free_slot < 0)
            free_slot = i;
    }
    if (free_slot < 0)
        free_slot = evictable(p, now);
    if (free_slot < 0)
        return -1;
    vgpu_sched_drop(&p->state, free_slot);
    __atomic_store_n(&p->taken[free_slot], (uint8_t)(p->taken[free_slot] + 1), __ATOMIC_RELEASE);
    p->who[free_slot].dev = dev;
    p->who[free_slot].ino = ino;
    p->who[free_slot].vdev = vdev;
    atomic_store(&p->who[free_slot].waiting, 0);
    atomic_store(&p->who[free_slot].running, 0);
    memset(&p->who[free_slot].demand, 0, sizeof(p->who[free_slot].demand));
    atomic_store(&p->who[free_slot].active_ns, now); /* not idle: just made */
    atomic_store(&p->who[free_slot].queued_until_ns, 0);
    atomic_store(&p->who[free_slot].behind_until_ns, 0);
    vgpu_sched_set(&p->state, free_slot, share, mode, now);
    return free_slot;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct vgpu_sched_page *vgpu_sched_page_open(const char *dir, const char *uuid, uint64_t dev, uint64_t ino,
                                             uint32_t vdev, uint32_t share, uint32_t mode, int *entry, char *err,
                                             size_t errlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/sched-%s.v%d", dir, uuid, VGPU_SCHED_PAGE_VERSION);
    /* The directory is the user's own (user_dir.h): no one else
     * can put a file or a link there; a FIFO still must not hang us. */
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        vgpu_fail(err, errlen, "cannot open %s, the compute share's page for GPU %s: %s", path, uuid, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || (st.st_size != 0 && (size_t)st.st_size != sizeof(struct vgpu_sched_page))) {
        close(fd);
        vgpu_fail(err, errlen, "%s is not a compute-share page (%lld bytes): remove it (no process of this user may "
                  "be using GPU %s)", path, (long long)st.st_size, uuid);
        return NULL;
    }
    /* The first process to get here makes the page; the others wait for it. */
    flock(fd, LOCK_EX);
    struct vgpu_sched_page *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (st.st_size != 0 || ftruncate(fd, sizeof(*p)) == 0))
        p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED && p->magic == 0) {
        memset(p, 0, sizeof(*p));
        p->version = VGPU_SCHED_PAGE_VERSION;
        p->size = sizeof(*p);
        vgpu_sched_init(&p->state, 0);
        __atomic_store_n(&p->magic, VGPU_SCHED_PAGE_MAGIC, __ATOMIC_RELEASE);
    }
    flock(fd, LOCK_UN);
    close(fd);
    if (p == MAP_FAILED) {
        vgpu_fail(err, errlen, "cannot map %s: %s", path, strerror(errno));
        return NULL;
    }
    if (p->magic != VGPU_SCHED_PAGE_MAGIC || p->version != VGPU_SCHED_PAGE_VERSION || p->size != sizeof(*p)) {
        vgpu_fail(err, errlen, "%s is not a compute-share page of this vgpu (version %u): remove it (no process of "
                  "this user may be using GPU %s)", path, p->version, uuid);
        munmap(p, sizeof(*p));
        return NULL;
    }
    lock(p);
    *entry = take_entry(p, dev, ino, vdev, share, mode, now_ns());
    unlock(p);
    if (*entry < 0) {
        munmap(p, sizeof(*p));
        vgpu_fail(err, errlen, "%s: more than %d vGPUs of this user share GPU %s", path, VGPU_SCHED_MAX_ENTRIES, uuid);
        return NULL;
    }
    return p;
}

int vgpu_sched_page_wait_begin(struct vgpu_sched_page *p, uint64_t dev, uint64_t ino, uint32_t vdev, uint32_t share,
                               uint32_t mode, int *entry, uint8_t *taking)
{
    /* Under the lock, as steps drop stale entries: a count made here is in
     * an entry that is the vGPU's, and wanting, so no step drops it. */
    lock(p);
    int e = *entry;
    if (e < 0 || !vgpu_sched_page_owns(p, e, dev, ino, vdev))
        e = take_entry(p, dev, ino, vdev, share, mode, now_ns());
    if (e >= 0) {
        atomic_fetch_add(&p->who[e].waiting, 1);
        *taking = p->taken[e];
        *entry = e;
    }
    unlock(p);
    return e < 0 ? -1 : 0;
}

void vgpu_sched_page_wait_end(struct vgpu_sched_page *p, int entry, uint8_t taking, uint64_t dev, uint64_t ino,
                              uint32_t vdev)
{
    lock(p);
    if (vgpu_sched_page_counted(p, entry, taking, dev, ino, vdev) && atomic_load(&p->who[entry].waiting) > 0)
        atomic_fetch_sub(&p->who[entry].waiting, 1);
    unlock(p);
}

/* An entry whose vGPU launched nothing for this long goes: its processes
 * may all have exited (they leave no word when they do). */
#define STALE_NS 60000000000ull

/* Under the lock: one sample of the holder's fill; the waiters woken when
 * the GPU opens (they may launch beside the holder now). */
static void sample(struct vgpu_sched_page *p, uint64_t now)
{
    struct vgpu_sched_state *g = &p->state;
    int h = g->holder;
    bool waits = h >= 0 && (atomic_load(&p->who[h].running) > p->who[h].demand.running_floor ||
                            atomic_load(&p->who[h].behind_until_ns) > now);
    if (vgpu_sched_sample(g, now, waits) && vgpu_sched_open(g)) {
        atomic_fetch_add(&p->generation, 1);
        vgpu_futex_wake_all(&p->generation);
    }
}

#define SAMPLE_EVERY_NS 500000ull

/* Whether holder h's fill was last sampled SAMPLE_EVERY_NS or more before now. */
static bool sample_due(const struct vgpu_sched_page *p, int h, uint64_t now)
{
    uint64_t last = __atomic_load_n(&p->state.e[h].sampled_ns, __ATOMIC_RELAXED);
    return now > last && now - last >= SAMPLE_EVERY_NS;
}

void vgpu_sched_page_sample(struct vgpu_sched_page *p, uint64_t now)
{
    int h = vgpu_sched_holder(&p->state);
    if (h < 0 || !sample_due(p, h, now))
        return;
    lock(p);
    if (p->state.holder == h && sample_due(p, h, now))
        sample(p, now);
    unlock(p);
}

void vgpu_sched_page_step(struct vgpu_sched_page *p, uint64_t now)
{
    lock(p);
    struct vgpu_sched_state *g = &p->state;
    bool demand[VGPU_SCHED_MAX_ENTRIES] = { false }, others = false;
    for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
        if (!g->e[i].used)
            continue;
        uint64_t active = atomic_load(&p->who[i].active_ns);
        uint32_t leftovers;
        /* active_ns is both the launches' counter and their time. */
        demand[i] = vgpu_sched_demand(&p->who[i].demand, i == g->holder, atomic_load(&p->who[i].waiting),
                                      atomic_load(&p->who[i].running), active, active, now, &leftovers);
        if (leftovers)
            vgpu_info("compute share: %u thread(s) counted waiting in entry %d never launched when it was given "
                      "the GPU: taken for leftovers of processes that died waiting, not counted for %.0f s", leftovers,
                      i, (double)p->who[i].demand.floor_ttl_ns / 1e9);
        if (i != g->holder && !demand[i] && now > active && now - active > STALE_NS) {
            vgpu_sched_drop(g, i);
            continue;
        }
        others |= demand[i] && i != g->holder;
    }
    bool holder_idle = g->holder >= 0 && !demand[g->holder];
    if (vgpu_sched_due(g, now) || (holder_idle && others)) {
        uint64_t idle_since = holder_idle ? atomic_load(&p->who[g->holder].active_ns) : 0;
        int was = g->holder;
        uint64_t queued_until = was >= 0 ? atomic_load(&p->who[was].queued_until_ns) : 0;
        if (vgpu_sched_step(g, now, demand, idle_since, queued_until > now ? queued_until - now : 0)) {
            if (g->holder >= 0)
                vgpu_sched_demand_granted(&p->who[g->holder].demand, atomic_load(&p->who[g->holder].active_ns), now);
            atomic_fetch_add(&p->generation, 1);
            vgpu_futex_wake_all(&p->generation);
        }
        if (was != g->holder && vgpu_log_enabled(VGPU_LOG_DEBUG))
            vgpu_debug("compute share: entry %d -> %d for %.2f ms (busy %.1f ms; %s)", was, g->holder,
                       (double)(g->until_ns - now) / 1e6, was >= 0 ? (double)g->e[was].busy_ns / 1e6 : 0.0,
                       holder_idle ? "the holder went idle" : "its quantum ended");
        if (was != g->holder && holder_idle && vgpu_log_enabled(VGPU_LOG_DEBUG))
            vgpu_debug("compute share: entry %d was idle: %u waiting (floor %u), %u running (floor %u), its last "
                       "launch %.1f ms before",
                       was, atomic_load(&p->who[was].waiting), p->who[was].demand.waiting_floor,
                       atomic_load(&p->who[was].running), p->who[was].demand.running_floor,
                       (double)(now - (idle_since < now ? idle_since : now)) / 1e6);
    }
    if (g->holder >= 0 && sample_due(p, g->holder, now))
        sample(p, now);
    unlock(p);
}
