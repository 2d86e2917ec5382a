/*
 * vgpu-executor --bar FILE: the host's supervisor of a VM's channels
 * (forwarder/remote/transport/channels.h, docs/guide/vm.md).  It lays the file
 * out, moves the header's heartbeat, and starts an executor process for
 * each channel a guest claims, which lays out the channel's ring, says it
 * serves and serves the guest there until the guest releases the channel,
 * abandons it or stops beating.  What the guest writes is never trusted:
 * the supervisor keeps its own record of which channel has an executor,
 * and each executor its own ring positions (ring.h).
 */
#define _GNU_SOURCE
#include "forwarder/remote/executor/executor.h"

#include "common/clock.h"
#include "common/log.h"
#include "forwarder/remote/transport/channels.h"
#include "forwarder/remote/transport/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How often the supervisor looks for claims and ended executors. */
#define LOOK_NS 2000000L

/* What an executor's ring asks: whether its guest is gone. */
struct guest_watch {
    struct vgpu_channel_ctl *ctl;
    uint64_t serving; /* the claim word while the channel is this executor's */
    uint64_t timeout_ns;
    struct vgpu_beat_watch beat;
};

static bool guest_gone(void *ctx)
{
    struct guest_watch *g = ctx;
    return __atomic_load_n(&g->ctl->claim, __ATOMIC_ACQUIRE) != g->serving ||
           vgpu_beat_stale(&g->beat, &g->ctl->guest_beat, g->timeout_ns);
}

/* The executor of channel i, claimed by claim (in a child of the
 * supervisor, which ends with it): its exit status. */
static int serve_channel(const struct vgpu_channels *c, int fd, bool bulk_ok, uint32_t i, uint64_t claim,
                         uint64_t timeout_ns)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Its waits poll once they stop spinning (no futex reaches a VM):
     * each sleep as asked, not the 50 us later the kernel's default
     * slack allows, which a guest's call after a pause would pay. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    struct vgpu_channel_ctl *ctl = vgpu_channel_ctl(c, i);
    size_t length;
    void *memory = vgpu_channel_ring(c, i, &length);
    struct vgpu_ring ring;
    if (vgpu_ring_format(&ring, memory, length, (length - VGPU_CHANNELS_PAGE) / 2) != 0) {
        vgpu_error("executor: channel %u has no room for a ring (%zu bytes)", i, length);
        return 1;
    }
    uint32_t pid = (uint32_t)(claim >> 8);
    struct guest_watch g = { ctl, vgpu_channel_word(VGPU_CHANNEL_SERVING, pid), timeout_ns, { 0, 0 } };
    char why[256];
    uint64_t ignored;
    if (vgpu_ring_settings(&ignored, &ring.spin, why, sizeof(why)) != 0)
        vgpu_warn("executor: %s", why);
    ring.peer_gone = guest_gone;
    ring.peer_ctx = &g;
    if (!__atomic_compare_exchange_n(&ctl->claim, &claim, g.serving, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return 0; /* let go of before it was served */
    vgpu_debug("executor: channel %u serves guest process %u", i, pid);
    struct vgpu_wire w = { .fd = -1, .ring = &ring };
    struct vgpu_exec_bulk bulk = { .fd = bulk_ok ? fd : -1 };
    bulk.offset = vgpu_channel_bulk(c, i, &bulk.size);
    return vgpu_exec_serve_wire(&w, &bulk);
}

/* Whether the driver can pin pages of fd's file (tmpfs): the kernel
 * refuses a long-term pin of a shared mapping of a disk's file. */
static bool pinnable(int fd)
{
    struct statfs f;
    return fstatfs(fd, &f) == 0 && f.f_type == 0x01021994; /* TMPFS_MAGIC */
}

/* The supervisor's own record of a channel. */
struct slot {
    pid_t executor;              /* its executor, 0 for none */
    struct vgpu_beat_watch beat; /* the guest's heartbeat, while it has none */
};

/* Executors started a second, after a burst of as many as there are
 * channels: a guest that claims and lets go again and again makes no
 * stream of forks (and of drivers loaded) on the host. */
#define STARTS_PER_SECOND 20u

/* The starts the supervisor may make now (a token bucket): its own. */
struct starts {
    double tokens, most;
    uint64_t at_ns;
};

static bool may_start(struct starts *b)
{
    uint64_t now = vgpu_now_ns();
    b->tokens += (double)(now - b->at_ns) * STARTS_PER_SECOND / 1e9;
    if (b->tokens > b->most)
        b->tokens = b->most;
    b->at_ns = now;
    if (b->tokens < 1)
        return false;
    b->tokens -= 1;
    return true;
}

static void set_free(struct vgpu_channel_ctl *ctl)
{
    __atomic_store_n(&ctl->pid_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ctl->start, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ctl->claim, 0, __ATOMIC_RELEASE);
}

/* One look at channel i, which has no executor: a claim gets one; a
 * channel let go of, or whose guest stopped beating, is freed; one that
 * says it is served has lost its executor. */
static void look(const struct vgpu_channels *c, int fd, bool bulk_ok, uint32_t i, struct slot *s,
                 struct starts *starts, uint64_t timeout_ns)
{
    struct vgpu_channel_ctl *ctl = vgpu_channel_ctl(c, i);
    uint64_t w = __atomic_load_n(&ctl->claim, __ATOMIC_ACQUIRE);
    switch (vgpu_channel_state_of(w)) {
    case VGPU_CHANNEL_FREE:
        s->beat = (struct vgpu_beat_watch){ 0, 0 };
        if (w) /* a pid with no state: not a claim */
            set_free(ctl);
        return;
    case VGPU_CHANNEL_CLAIMED: {
        if (!may_start(starts))
            return; /* its turn comes */
        pid_t p = fork();
        if (p == 0)
            _exit(serve_channel(c, fd, bulk_ok, i, w, timeout_ns));
        if (p > 0) {
            s->executor = p;
            return;
        }
        vgpu_error("executor: cannot start an executor for channel %u: %s", i, strerror(errno));
        __atomic_compare_exchange_n(&ctl->claim, &w, (w & ~(uint64_t)0xff) | VGPU_CHANNEL_DEAD, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
        return;
    }
    case VGPU_CHANNEL_CLOSED:
    case VGPU_CHANNEL_ABANDONED:
        set_free(ctl);
        return;
    case VGPU_CHANNEL_SERVING: /* its executor ended: the guest is to hear it */
        __atomic_compare_exchange_n(&ctl->claim, &w, (w & ~(uint64_t)0xff) | VGPU_CHANNEL_DEAD, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
        return;
    default: /* dead, or a state that is none: freed once its guest is gone */
        if (vgpu_beat_stale(&s->beat, &ctl->guest_beat, timeout_ns))
            set_free(ctl);
        return;
    }
}

/* The executors that ended: their channels have none. */
static void reap(struct slot *slots, uint32_t count)
{
    for (;;) {
        int status;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p <= 0)
            return;
        for (uint32_t i = 0; i < count; i++)
            if (slots[i].executor == p) {
                slots[i].executor = 0;
                slots[i].beat = (struct vgpu_beat_watch){ 0, 0 };
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                    vgpu_warn("executor: channel %u's executor ended (%s %d)", i,
                              WIFEXITED(status) ? "status" : "signal",
                              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            }
    }
}

int vgpu_exec_serve_channels(int fd, const char *path, unsigned count, uint64_t timeout_ns)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        vgpu_error("executor: cannot serve %s: not a regular file", path);
        return 1;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        struct vgpu_channels_header h;
        if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.magic == VGPU_CHANNELS_MAGIC && h.count != count) {
            vgpu_error("executor: %s is served by another vgpu-executor, of %u channels, not %u: stop that one for "
                       "this one to serve",
                       path, h.count, count);
            return 1;
        }
        vgpu_info("executor: %s is served by another vgpu-executor already", path);
        return 0;
    }
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        vgpu_error("executor: cannot map %s: %s", path, strerror(errno));
        return 1;
    }
    const char *name = getenv("VGPU_NAME");
    struct vgpu_channels c;
    char why[256];
    if (vgpu_channels_format(&c, base, (size_t)st.st_size, count, name, why, sizeof(why)) != 0) {
        vgpu_error("executor: cannot lay out %s: %s", path, why);
        return 1;
    }
    struct slot *slots = calloc(count, sizeof(*slots));
    if (!slots)
        return 1;
    struct starts starts = { count, count, vgpu_now_ns() };
    bool bulk_ok = pinnable(fd);
    if (!bulk_ok)
        vgpu_warn("executor: %s is not on tmpfs, whose pages the driver may pin for good as a disk's it may not: the "
                  "guests' page-locked memory stays their own, copies of it cross in messages, and no kernel reaches "
                  "it; keep the file on tmpfs (/dev/shm, or the mediator's state_dir there; docs/guide/vm.md)",
                  path);
    vgpu_info("executor: serving %u channels of %llu KiB in %s%s%s", count,
              (unsigned long long)(c.channel_bytes >> 10), path, name ? " for vGPU " : "", name ? name : "");
    struct vgpu_channels_header *h = vgpu_channels_header(&c);
    uint64_t next_beat = 0;
    for (;;) {
        /* Cut (by QEMU's group, or a mistake): the pages past its end would
         * fault here; the channels end, said, before they are touched. */
        if (fstat(fd, &st) == 0 && (uint64_t)st.st_size < (uint64_t)c.length) {
            vgpu_error("executor: %s shrank to %lld bytes under its channels: they end; start the supervisor again "
                       "(a reload of vgpu-mediatord makes the file anew)",
                       path, (long long)st.st_size);
            return 1;
        }
        reap(slots, count);
        for (uint32_t i = 0; i < count; i++)
            if (!slots[i].executor)
                look(&c, fd, bulk_ok, i, &slots[i], &starts, timeout_ns);
        uint64_t now = vgpu_now_ns();
        if (now >= next_beat) {
            __atomic_fetch_add(&h->beat, 1, __ATOMIC_RELEASE);
            next_beat = now + VGPU_CHANNELS_BEAT_MS * 1000000ull;
            /* The file removed (its vGPU gone from the mediator's config):
             * the channels end, their executors with the supervisor. */
            if (fstat(fd, &st) == 0 && st.st_nlink == 0) {
                vgpu_info("executor: %s was removed: its channels end", path);
                return 0;
            }
        }
        struct timespec t = { 0, LOOK_NS };
        nanosleep(&t, NULL);
    }
}
