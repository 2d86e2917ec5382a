/*
 * BAR0 layout v3, the window itself: initialise, validate, account, claim
 * and free process slots, reap.  Mapping it from files is bar0_attach.c's
 * job.  See bar0.h and docs/reference/bar0.md.
 */
#define _GNU_SOURCE
#include "common/contract/window/bar0.h"

#include "common/error.h"
#include "common/log.h"
#include "common/contract/window/pid_ns.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(offsetof(struct vgpu_bar0, config) == 0x100, "config region at 0x100");
_Static_assert(offsetof(struct vgpu_bar0, status) == VGPU_BAR0_CONFIG_PAGE, "status region at 0x1000");
_Static_assert(offsetof(struct vgpu_bar0, procs) == 0x2000, "process table at 0x2000");
_Static_assert(sizeof(struct vgpu_bar0_header) == 128, "header is 128 bytes");
_Static_assert(offsetof(struct vgpu_bar0_header, flags) == 52, "flags at header offset 52");
_Static_assert(offsetof(struct vgpu_bar0_header, name) == 56, "name at header offset 56");
_Static_assert(sizeof(struct vgpu_bar0_device_config) == 128, "device config is 128 bytes");
_Static_assert(offsetof(struct vgpu_bar0_status, mediator_epoch) == 12, "epoch at status offset 12");
_Static_assert(offsetof(struct vgpu_bar0_status, changes) == 16, "changes at status offset 16");
_Static_assert(offsetof(struct vgpu_bar0_status, device) == 64, "devices at status offset 64");
_Static_assert(sizeof(struct vgpu_bar0_proc) == 160, "process slot is 160 bytes");
_Static_assert(offsetof(struct vgpu_bar0_proc, busy) == 144, "busy at slot offset 144");
_Static_assert(sizeof(struct vgpu_bar0_device_status) == 128, "device status is 128 bytes");
_Static_assert(offsetof(struct vgpu_bar0_device_status, sched_waiting) == 36, "sched_waiting at device offset 36");
_Static_assert(offsetof(struct vgpu_bar0_device_status, sched_launches) == 48, "sched_launches at device offset 48");
_Static_assert(offsetof(struct vgpu_bar0_device_status, sched_busy_ns) == 56, "sched_busy_ns at device offset 56");
_Static_assert(offsetof(struct vgpu_bar0_device_status, sched_queued_ns) == 72, "sched_queued_ns at device offset 72");
_Static_assert(offsetof(struct vgpu_bar0_device_status, sched_behind_ns) == 88, "sched_behind_ns at device offset 88");
_Static_assert(offsetof(struct vgpu_bar0, turn) == 0xc00, "turns at 0xc00, on the first page");
_Static_assert(sizeof(struct vgpu_bar0_device_turn) == 16, "a device's turn is 16 bytes");
_Static_assert(sizeof(struct vgpu_bar0) % 4096 == 0 && sizeof(struct vgpu_bar0) <= VGPU_BAR0_GUEST_FILE_SIZE,
               "the window is whole pages and fits a guest BAR");
_Static_assert(sizeof(_Atomic uint64_t) == 8 && sizeof(_Atomic uint32_t) == 4, "plain-sized atomics");

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- processes ---- */

uint64_t vgpu_proc_start_time(int pid)
{
    return vgpu_proc_start_time_at("/proc", pid, NULL);
}

/* Unknown counts as alive: returning a live process's memory would break
 * the quota.  Dead is: no such pid, a zombie, or another process under the
 * pid (another start time). */
bool vgpu_bar0_owner_alive(int pid, uint64_t start_time)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return false;
    bool zombie = false;
    uint64_t t = vgpu_proc_start_time_at("/proc", pid, &zombie);
    if (t == 0)
        return true; /* there, but /proc will not say more (hidepid, another PID namespace) */
    return !zombie && t == start_time;
}

/* *v -= n, never below 0: a count that wrapped would refuse every
 * allocation of the vGPU until its window is made again. */
static void sub_saturating(_Atomic uint64_t *v, uint64_t n)
{
    uint64_t u = atomic_load_explicit(v, memory_order_relaxed);
    while (!atomic_compare_exchange_weak(v, &u, u > n ? u - n : 0))
        ;
}

void vgpu_bar0_claim_slot_at(struct vgpu_bar0 *b, int slot, int pid, uint64_t start_time, uint64_t pid_ns)
{
    struct vgpu_bar0_proc *p = &b->procs[slot];
    /* The caller serialises claims, so no one else takes this slot;
     * reapers skip it until it turns LIVE, after start_time.  busy marks
     * the claim for vgpu_bar0_rebuild, which would otherwise see the count
     * moved and the slot not yet live.  A store, not an increment: whatever
     * a process killed while busy (or while claiming) left in it goes. */
    atomic_store(&p->busy, 1);
    p->start_time = start_time;
    p->pid_ns = pid_ns;
    for (int d = 0; d < VGPU_MAX_DEVICES; d++)
        atomic_store(&p->held[d], 0);
    atomic_fetch_add(&b->status.processes, 1);
    atomic_store(&p->owner, VGPU_BAR0_OWNER(pid, VGPU_PROC_LIVE));
    atomic_fetch_add(&b->status.changes, 1);
    atomic_store(&p->busy, 0);
}

uint64_t vgpu_bar0_pid_ns(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

int vgpu_bar0_claim_slot(struct vgpu_bar0 *b, int pid, uint64_t start_time)
{
    int slot = -1;
    for (int i = 0; i < VGPU_BAR0_MAX_PROCS; i++) {
        if (atomic_load(&b->procs[i].owner) != 0)
            continue;
        /* Claims are serialised: a free slot marked busy is one whose
         * claimer was killed, and would keep the counters from being
         * rebuilt. */
        if (atomic_load(&b->procs[i].busy))
            atomic_store(&b->procs[i].busy, 0);
        if (slot < 0)
            slot = i;
    }
    if (slot >= 0)
        vgpu_bar0_claim_slot_at(b, slot, pid, start_time, vgpu_bar0_pid_ns());
    return slot;
}

/* Returns what a slot being reaped (by this process: owner says so) still
 * holds to the counters, and frees it.  processes is decremented by the
 * first reaper only; one that finishes a dead reaper's work leaves it to
 * vgpu_bar0_rebuild (the dead one may or may not have decremented it). */
static uint64_t finish_release(struct vgpu_bar0 *b, int slot, bool decrement)
{
    struct vgpu_bar0_proc *p = &b->procs[slot];
    uint64_t sum = 0;
    for (int d = 0; d < VGPU_MAX_DEVICES; d++) {
        uint64_t held = atomic_exchange(&p->held[d], 0);
        if (held)
            sub_saturating(&b->status.device[d].memory_used, held);
        sum += held;
    }
    if (decrement)
        atomic_fetch_sub(&b->status.processes, 1);
    atomic_store(&p->busy, 0); /* what a process killed between two updates left */
    atomic_fetch_add(&b->status.changes, 1);
    /* Freed only if it is still this reaper's: one taken for dead while it
     * was not (a pid another namespace reused) must not free the slot that
     * the one who took it over has since given to a new process. */
    uint64_t mine = VGPU_BAR0_OWNER(getpid(), VGPU_PROC_REAPING);
    atomic_compare_exchange_strong(&p->owner, &mine, 0);
    return sum;
}

bool vgpu_bar0_release_slot(struct vgpu_bar0 *b, int slot, uint64_t owner, uint64_t *returned)
{
    /* The reaping word names the reaper, so that the slot of one killed
     * halfway is finished by the next (vgpu_bar0_reap). */
    if (VGPU_BAR0_OWNER_STATE(owner) != VGPU_PROC_LIVE ||
        !atomic_compare_exchange_strong(&b->procs[slot].owner, &owner, VGPU_BAR0_OWNER(getpid(), VGPU_PROC_REAPING)))
        return false; /* another process frees it, or it changed hands */
    uint64_t sum = finish_release(b, slot, true);
    if (returned)
        *returned = sum;
    return true;
}

/* No such process, or a zombie; a pid that /proc will not say more of is
 * taken to be at work.  (Its start time is not known: a pid reused since
 * only delays the finishing.) */
static bool process_gone(int pid)
{
    if (kill(pid, 0) != 0)
        return errno == ESRCH;
    bool zombie = false;
    return vgpu_proc_start_time_at("/proc", pid, &zombie) != 0 && zombie;
}

/* A slot whose reaper died halfway (killed, as any process of the vGPU may
 * be) would stay reaping for good, and keep vgpu_bar0_rebuild from ever
 * mending the counters: taken over and finished.  What the dead reaper had
 * taken out of the slot but not yet off the counters, the rebuild that
 * follows mends. */
static void finish_dead_reapers_work(struct vgpu_bar0 *b, int slot, uint64_t o)
{
    int reaper = VGPU_BAR0_OWNER_PID(o);
    if (reaper == getpid() || !process_gone(reaper))
        return; /* at work, or cannot tell */
    if (!atomic_compare_exchange_strong(&b->procs[slot].owner, &o, VGPU_BAR0_OWNER(getpid(), VGPU_PROC_REAPING)))
        return;
    finish_release(b, slot, false);
    vgpu_info("vGPU %s: slot %d was left half returned by a process that died returning it (pid %d); finished",
              b->header.name[0] ? b->header.name : "(standalone)", slot, reaper);
}

void vgpu_bar0_reap(struct vgpu_bar0 *b, bool force)
{
    if (b->header.flags & VGPU_BAR0_MEDIATED)
        return; /* processes may be in other PID namespaces: only the mediator knows */
    uint64_t now = now_ns(), last = atomic_load_explicit(&b->status.last_reap_ns, memory_order_relaxed);
    if (!force && (now - last < 1000000000u ||
                   !atomic_compare_exchange_strong(&b->status.last_reap_ns, &last, now)))
        return;
    if (force)
        atomic_store(&b->status.last_reap_ns, now);
    /* A slot of another PID namespace names a pid this one cannot look up:
     * it is left to its own namespace's processes (or to the vGPU's going
     * idle), never taken for dead.  (A reaper works in its dead process's
     * namespace, so the slot's namespace is the reaper's too.) */
    uint64_t ns = vgpu_bar0_pid_ns();
    for (int i = 0; i < VGPU_BAR0_MAX_PROCS; i++) {
        uint64_t o = atomic_load(&b->procs[i].owner);
        int state = VGPU_BAR0_OWNER_STATE(o);
        if (state != VGPU_PROC_LIVE && state != VGPU_PROC_REAPING)
            continue;
        uint64_t theirs = b->procs[i].pid_ns;
        if (theirs && ns && theirs != ns)
            continue;
        if (state == VGPU_PROC_REAPING) {
            if (theirs && ns) /* its reaper's pid is known to be one of this namespace's */
                finish_dead_reapers_work(b, i, o);
        } else if (!vgpu_bar0_owner_alive(VGPU_BAR0_OWNER_PID(o), b->procs[i].start_time))
            vgpu_bar0_release_slot(b, i, o, NULL);
    }
    vgpu_bar0_rebuild(b);
}

unsigned vgpu_bar0_live_slots(const struct vgpu_bar0 *b)
{
    unsigned n = 0;
    for (int i = 0; i < VGPU_BAR0_MAX_PROCS; i++)
        n += VGPU_BAR0_OWNER_STATE(atomic_load(&b->procs[i].owner)) == VGPU_PROC_LIVE;
    return n;
}

/*
 * Why this is exact.  Every change is bracketed: before it moves a counter,
 * a thread counts itself into its slot's busy word (a claimer sets it, a
 * reaper turns the slot REAPING); once it has moved the slot too, it bumps
 * changes, then leaves the bracket (seq_cst, as the loads here).  The
 * rebuild reads changes, the counters, every slot, and changes again.  A
 * change that the counters and the slots would see differently moved one
 * of them between the read of the counters and the read of its slot: if it
 * was still in its bracket when its slot was read, the slot shows it and
 * the rebuild gives up; if it had left it, it had bumped changes, and the
 * rebuild gives up.  So the sums are of one moment.  The CAS replaces a
 * counter only if it still reads what it read then; changes that landed
 * since and left it there moved the slots by as much, or will before they
 * leave their brackets, so the correction stays exact.  (Without the
 * bracket a thread that frees what a thread of a slot read earlier takes
 * leaves the counter where it was, and sums of two moments pass the CAS.)
 */
int vgpu_bar0_rebuild(struct vgpu_bar0 *b)
{
    uint64_t seen[VGPU_MAX_DEVICES], held[VGPU_MAX_DEVICES] = { 0 };
    uint64_t changes = atomic_load(&b->status.changes);
    for (int d = 0; d < VGPU_MAX_DEVICES; d++)
        seen[d] = atomic_load(&b->status.device[d].memory_used);
    uint32_t processes = atomic_load(&b->status.processes), live = 0;
    for (int i = 0; i < VGPU_BAR0_MAX_PROCS; i++) {
        const struct vgpu_bar0_proc *p = &b->procs[i];
        int state = VGPU_BAR0_OWNER_STATE(atomic_load(&p->owner));
        if (state == VGPU_PROC_REAPING || atomic_load(&p->busy))
            return -1;
        if (state != VGPU_PROC_LIVE)
            continue;
        live++;
        for (int d = 0; d < VGPU_MAX_DEVICES; d++)
            held[d] += atomic_load(&p->held[d]);
    }
    if (atomic_load(&b->status.changes) != changes)
        return -1;
    int corrected = 0;
    for (int d = 0; d < VGPU_MAX_DEVICES; d++)
        if (seen[d] != held[d] &&
            atomic_compare_exchange_strong(&b->status.device[d].memory_used, &seen[d], held[d])) {
            corrected++;
            char was[32], now[32];
            vgpu_info("vGPU %s device %d: usage counter corrected from %s to %s, what its live processes hold "
                      "(a process died between two updates, or the window was written to)",
                      b->header.name[0] ? b->header.name : "(standalone)", d,
                      vgpu_format_size(seen[d], was, sizeof(was)), vgpu_format_size(held[d], now, sizeof(now)));
        }
    if (processes != live && atomic_compare_exchange_strong(&b->status.processes, &processes, live))
        corrected++;
    return corrected;
}

/* ---- the window ---- */

int vgpu_bar0_validate(const struct vgpu_bar0 *b, uint64_t file_size, char *err, size_t errlen)
{
    const struct vgpu_bar0_header *h = &b->header;
    if (h->magic != VGPU_BAR0_MAGIC)
        return vgpu_fail(err, errlen, "not a vgpu BAR0 (magic 0x%016llx, want 0x%016llx)", (unsigned long long)h->magic,
                    (unsigned long long)VGPU_BAR0_MAGIC);
    if (h->version != VGPU_BAR0_VERSION)
        return vgpu_fail(err, errlen, "BAR0 layout version %u; this vgpu reads version %u", h->version,
                    VGPU_BAR0_VERSION);
    if (h->header_size != sizeof(*h) || h->size != sizeof(struct vgpu_bar0) || h->size > file_size ||
        h->config_offset != offsetof(struct vgpu_bar0, config) ||
        h->status_offset != offsetof(struct vgpu_bar0, status) ||
        h->procs_offset != offsetof(struct vgpu_bar0, procs) || h->max_devices != VGPU_MAX_DEVICES ||
        h->max_procs != VGPU_BAR0_MAX_PROCS || h->proc_size != sizeof(struct vgpu_bar0_proc))
        return vgpu_fail(err, errlen, "BAR0 header is inconsistent (size %llu of a %llu-byte file, regions at "
                    "0x%x/0x%x/0x%x): corrupt, or written by another layout",
                    (unsigned long long)h->size, (unsigned long long)file_size, h->config_offset, h->status_offset,
                    h->procs_offset);
    if ((h->flags & ~(VGPU_BAR0_MEDIATED | VGPU_BAR0_GUEST)) ||
        h->flags == (VGPU_BAR0_MEDIATED | VGPU_BAR0_GUEST) || !memchr(h->name, 0, sizeof(h->name)))
        return vgpu_fail(err, errlen, "BAR0 header (flags 0x%x) is corrupt", h->flags);
    if (b->config.device_count > VGPU_MAX_DEVICES)
        return vgpu_fail(err, errlen, "BAR0 config lists %u devices (at most %d): corrupt", b->config.device_count,
                    VGPU_MAX_DEVICES);
    for (uint32_t d = 0; d < b->config.device_count; d++) {
        const struct vgpu_bar0_device_config *c = &b->config.device[d];
        if (!memchr(c->physical, 0, sizeof(c->physical)) || !memchr(c->name, 0, sizeof(c->name)) ||
            c->compute_share == 0 || c->compute_share > 100 || c->compute_mode > VGPU_COMPUTE_CAP)
            return vgpu_fail(err, errlen, "BAR0 config of device %u is corrupt", d);
    }
    return 0;
}

void vgpu_bar0_write_config(struct vgpu_bar0 *b, const struct vgpu_bar0_config *config)
{
    b->config.device_count = config->device_count;
    b->config.all_devices = config->all_devices;
    for (int d = 0; d < VGPU_MAX_DEVICES; d++) {
        struct vgpu_bar0_device_config *to = &b->config.device[d];
        const struct vgpu_bar0_device_config *from = &config->device[d];
        memcpy(to->physical, from->physical, sizeof(to->physical));
        atomic_store(&to->memory_limit, atomic_load(&from->memory_limit));
        to->compute_share = from->compute_share;
        to->compute_mode = from->compute_mode;
        memcpy(to->name, from->name, sizeof(to->name));
    }
    atomic_fetch_add(&b->header.config_generation, 1);
}

void vgpu_bar0_init(struct vgpu_bar0 *b, const struct vgpu_bar0_config *config, uint32_t flags, const char *name)
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
    b->header.flags = flags;
    snprintf(b->header.name, sizeof(b->header.name), "%s", name ? name : "");
    vgpu_bar0_write_config(b, config);
    /* Magic last: a reader that sees it sees a complete window. */
    __atomic_store_n(&b->header.magic, VGPU_BAR0_MAGIC, __ATOMIC_RELEASE);
}

/* ---- accounting ---- */

/* Brackets one thread's update of a device's counter and its process's
 * held word (see vgpu_bar0_rebuild): the increment is seq_cst, before the
 * counter moves.  A count, not a flag: the process's threads share the
 * slot, and one that finishes must not clear the mark of one still between
 * its two updates. */
static _Atomic uint64_t *busy_begin(struct vgpu_bar0_map *m)
{
    _Atomic uint64_t *busy = &m->bar->procs[m->slot].busy;
    atomic_fetch_add(busy, 1);
    return busy;
}

/* moved: the counters and the slot were changed, and vgpu_bar0_rebuild
 * must know. */
static void busy_end(struct vgpu_bar0_map *m, _Atomic uint64_t *busy, bool moved)
{
    if (moved)
        atomic_fetch_add(&m->bar->status.changes, 1);
    atomic_fetch_sub(busy, 1);
}

bool vgpu_bar0_take(struct vgpu_bar0_map *m, int dev, uint64_t bytes, uint64_t limit)
{
    if (m->slot < 0)
        return false;
    _Atomic uint64_t *busy = busy_begin(m);
    _Atomic uint64_t *used = &m->bar->status.device[dev].memory_used;
    uint64_t u = atomic_load_explicit(used, memory_order_relaxed);
    do {
        if (limit && (u > limit || bytes > limit - u)) {
            busy_end(m, busy, false);
            return false;
        }
    } while (!atomic_compare_exchange_weak(used, &u, u + bytes));
    atomic_fetch_add(&m->bar->procs[m->slot].held[dev], bytes);
    busy_end(m, busy, true);
    return true;
}

void vgpu_bar0_take_anyway(struct vgpu_bar0_map *m, int dev, uint64_t bytes)
{
    if (m->slot < 0)
        return;
    _Atomic uint64_t *busy = busy_begin(m);
    atomic_fetch_add(&m->bar->status.device[dev].memory_used, bytes);
    atomic_fetch_add(&m->bar->procs[m->slot].held[dev], bytes);
    busy_end(m, busy, true);
}

void vgpu_bar0_give(struct vgpu_bar0_map *m, int dev, uint64_t bytes)
{
    if (m->slot < 0)
        return;
    _Atomic uint64_t *busy = busy_begin(m);
    sub_saturating(&m->bar->status.device[dev].memory_used, bytes);
    sub_saturating(&m->bar->procs[m->slot].held[dev], bytes);
    busy_end(m, busy, true);
}

void vgpu_bar0_recount(struct vgpu_bar0_map *m, int dev, uint64_t counted, uint64_t now)
{
    if (now > counted)
        vgpu_bar0_take_anyway(m, dev, now - counted);
    else if (now < counted)
        vgpu_bar0_give(m, dev, counted - now);
}

void vgpu_bar0_detach(struct vgpu_bar0_map *m)
{
    if (m->bar && m->slot >= 0 && m->pid == getpid())
        vgpu_bar0_release_slot(m->bar, m->slot, m->owner, NULL);
    m->slot = -1;
}
