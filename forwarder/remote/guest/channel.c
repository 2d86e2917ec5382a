/* A guest process's channel (guest.h). */
#define _GNU_SOURCE
#include "forwarder/remote/guest/channel.h"

#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/pci.h"
#include "forwarder/remote/transport/channels.h"
#include "forwarder/remote/transport/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long the supervisor's heartbeat may stand still, and how long an
 * executor may take to serve a claim, before the host counts as gone. */
#define HOST_TIMEOUT_NS (10ull * 1000000000u)

/* This library's channel, owned by this file (its caller serialises
 * connect and release; the heartbeat thread reads `index` only).  The
 * memory stays mapped for the process's life once found. */
static struct vgpu_channels mem;
static int mem_fd = -1; /* the memory's file, kept open to map the bulk again */
static int index_claimed = -1;
static uint64_t claim_word, epoch, claim_ns; /* the claim word, the header's epoch, this process's PID namespace */
static struct vgpu_beat_watch host_beat;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static bool beating;

bool vgpu_channel_wanted(const char *where)
{
    return strcmp(where, "pci") == 0 || strncmp(where, "bar:", 4) == 0;
}

/* path mapped read-write and checked as channels into mem.  0, 1 (not
 * channels), or -1 with err. */
static int map(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == EROFS)
            return vgpu_fail(err, errlen,
                             "%s is on a read-only file system (a systemd sandbox's ProtectKernelTunables= or "
                             "ProtectSystem=strict makes /sys so): give the service ReadWritePaths=%s "
                             "(docs/guide/vm.md)",
                             path, path);
        if (e == EACCES || e == EPERM)
            return vgpu_pci_refused(path, e, err, errlen);
        return vgpu_fail(err, errlen, "cannot open %s: %s", path, strerror(e));
    }
    struct stat st = { 0 };
    void *p = fstat(fd, &st) == 0 && st.st_size >= 2 * VGPU_CHANNELS_PAGE
                  ? mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    int e = errno;
    if (p == MAP_FAILED) {
        close(fd);
        return vgpu_fail(err, errlen, "cannot map %s: %s", path,
                         st.st_size < 2 * VGPU_CHANNELS_PAGE ? "too small" : strerror(e));
    }
    if (!vgpu_channels_check(&mem, p, (size_t)st.st_size)) {
        munmap(p, (size_t)st.st_size);
        close(fd);
        return 1;
    }
    mem_fd = fd;
    return 0;
}

/* The scan of the PCI bus: a device whose BAR holds channels (of the vGPU
 * VGPU_NAME names, if it does). */
struct search {
    const char *want;
    char *err;
    size_t errlen;
    bool refused;
};

static int visit(const char *dev, const char *address, void *ctx)
{
    struct search *s = ctx;
    char path[4096 + 512];
    snprintf(path, sizeof(path), "%s/%s", dev, VGPU_PCI_MEMORY_BAR);
    /* Read-only first (sysfs lets anyone stat; a read-only open needs no
     * more than reading), so that a BAR of someone else's is not opened
     * for writing. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    const struct vgpu_channels_header *h =
        fd >= 0 ? mmap(NULL, VGPU_CHANNELS_PAGE, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    if (h == MAP_FAILED) {
        if (fd < 0 && (errno == EACCES || errno == EPERM)) {
            vgpu_pci_refused(path, errno, s->err, s->errlen);
            s->refused = true;
        }
        return 0;
    }
    char name[sizeof(h->vgpu)];
    bool ours = h->magic == VGPU_CHANNELS_MAGIC && memchr(h->vgpu, 0, sizeof(h->vgpu));
    if (ours)
        memcpy(name, h->vgpu, sizeof(name));
    munmap((void *)h, VGPU_CHANNELS_PAGE);
    if (!ours || (s->want && strcmp(s->want, name) != 0))
        return 0;
    int r = map(path, s->err, s->errlen);
    if (r == 0)
        vgpu_info("remote GPU: vGPU \"%s\" is PCI device %s (%u channels)", name, address, mem.count);
    return r == 0 ? 1 : r < 0 ? -1 : 0;
}

/* mem, mapped once: 0, or -1 with err. */
static int find(const char *where, char *err, size_t errlen)
{
    /* Found before: its layout read again (a supervisor started since may
     * have laid it out anew, of another count). */
    if (mem.base)
        return vgpu_channels_check(&mem, mem.base, mem.length)
                   ? 0
                   : vgpu_fail(err, errlen, "the vGPU's BAR holds no channels any more: is its supervisor running?");
    if (strncmp(where, "bar:", 4) == 0) {
        int r = map(where + 4, err, errlen);
        return r == 1 ? vgpu_fail(err, errlen, "%s holds no channels of a vGPU: is vgpu-executor --bar serving it?",
                                  where + 4)
                      : r;
    }
    const char *want = getenv("VGPU_NAME");
    struct search s = { want && *want ? want : NULL, err, errlen, false };
    int r = vgpu_pci_each(visit, &s, err, errlen);
    if (r == 1)
        return 0;
    if (r < 0 || s.refused)
        return -1;
    char dir[4096];
    return vgpu_fail(err, errlen,
                     "no PCI device under %s holds a remote vGPU's channels%s%s%s: does the VM have the vGPU's "
                     "ivshmem device, and does the host's mediator serve its file (docs/guide/vm.md)?",
                     vgpu_pci_devices_dir(dir, sizeof(dir)), s.want ? " (of vGPU \"" : "", s.want ? s.want : "",
                     s.want ? "\")" : "");
}

/* A process's start time (clock ticks after boot, /proc/PID/stat); 0 when
 * it cannot be read (no such process, or one /proc hides). */
static uint64_t start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
    unsigned long long start = 0;
    /* After ")": state, then fields 4 to 21, then 22, the start time. */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                     &start) != 1)
        return 0;
    return start;
}

static uint64_t pid_ns(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Channels whose claimer is dead (a process of this PID namespace whose
 * pid is gone or reused) are abandoned: their executors end, and the
 * supervisor frees them. */
static void reap(uint64_t my_ns)
{
    for (uint32_t i = 0; my_ns && i < mem.count; i++) {
        struct vgpu_channel_ctl *c = vgpu_channel_ctl(&mem, i);
        uint64_t w = __atomic_load_n(&c->claim, __ATOMIC_ACQUIRE);
        enum vgpu_channel_state s = vgpu_channel_state_of(w);
        if ((s != VGPU_CHANNEL_CLAIMED && s != VGPU_CHANNEL_SERVING && s != VGPU_CHANNEL_DEAD) ||
            __atomic_load_n(&c->pid_ns, __ATOMIC_RELAXED) != my_ns)
            continue;
        uint64_t started = __atomic_load_n(&c->start, __ATOMIC_RELAXED);
        pid_t pid = (pid_t)(w >> 8);
        uint64_t now = started ? start_time(pid) : 0;
        /* Dead: no such process (kill says so: /proc may hide another
         * user's, hidepid= or ProtectProc=), or another of that pid. */
        if (!started || !((kill(pid, 0) != 0 && errno == ESRCH) || (now && now != started)))
            continue;
        if (__atomic_compare_exchange_n(&c->claim, &w, vgpu_channel_word(VGPU_CHANNEL_ABANDONED, (uint32_t)pid),
                                        false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            vgpu_info("remote GPU: channel %u's process %d is gone: its executor is ended", i, (int)pid);
    }
}

static void *beat(void *unused)
{
    (void)unused;
    for (;;) {
        struct timespec t = { 0, VGPU_CHANNELS_BEAT_MS * 1000000L };
        nanosleep(&t, NULL);
        int i = __atomic_load_n(&index_claimed, __ATOMIC_ACQUIRE);
        if (i >= 0)
            __atomic_fetch_add(&vgpu_channel_ctl(&mem, (uint32_t)i)->guest_beat, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void start_beat(void)
{
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 64 << 10);
    beating = pthread_create(&t, &a, beat, NULL) == 0;
    pthread_attr_destroy(&a);
}

static void at_exit(void)
{
    vgpu_channel_release();
}

static void register_exit(void)
{
    atexit(at_exit);
}

/* The ring's: whether the executor of this channel, or its supervisor, is gone. */
static bool host_gone(void *unused)
{
    (void)unused;
    int i = __atomic_load_n(&index_claimed, __ATOMIC_RELAXED);
    if (i < 0)
        return true;
    const struct vgpu_channels_header *h = vgpu_channels_header(&mem);
    return __atomic_load_n(&vgpu_channel_ctl(&mem, (uint32_t)i)->claim, __ATOMIC_ACQUIRE) != claim_word ||
           __atomic_load_n(&h->epoch, __ATOMIC_RELAXED) != epoch ||
           vgpu_beat_stale(&host_beat, &h->beat, HOST_TIMEOUT_NS);
}

/* Claims a free channel: its index, or -1. */
static int claim(uint32_t pid, uint64_t my_ns)
{
    for (uint32_t i = 0; i < mem.count; i++) {
        struct vgpu_channel_ctl *c = vgpu_channel_ctl(&mem, i);
        uint64_t free_word = 0, w = vgpu_channel_word(VGPU_CHANNEL_CLAIMED, pid);
        if (!__atomic_compare_exchange_n(&c->claim, &free_word, w, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue;
        /* The supervisor starts an executor on seeing the claim; these
         * are for reapers, who wait until they are known. */
        __atomic_store_n(&c->pid_ns, my_ns, __ATOMIC_RELAXED);
        __atomic_store_n(&c->start, start_time((pid_t)pid), __ATOMIC_RELEASE);
        claim_word = w;
        claim_ns = my_ns;
        return (int)i;
    }
    return -1;
}

int vgpu_channel_connect(const char *where, struct vgpu_ring *r, char *err, size_t errlen)
{
    if (find(where, err, errlen) != 0)
        return -1;
    const struct vgpu_channels_header *h = vgpu_channels_header(&mem);
    epoch = __atomic_load_n(&h->epoch, __ATOMIC_ACQUIRE);
    host_beat = (struct vgpu_beat_watch){ 0 };
    uint32_t pid = (uint32_t)getpid();
    uint64_t my_ns = pid_ns();
    reap(my_ns);
    int i = claim(pid, my_ns);
    if (i < 0)
        return vgpu_fail(err, errlen,
                         "all %u channels of vGPU \"%s\" are in use by other processes: every call fails (the "
                         "host's vgpu-executor --bar gives more with --channels)",
                         mem.count, h->vgpu);
    pthread_once(&exit_once, register_exit);
    if (!beating)
        start_beat(); /* a child of fork has none: its own */
    __atomic_store_n(&index_claimed, i, __ATOMIC_RELEASE);
    /* The executor lays the ring out, then says it serves. */
    struct vgpu_channel_ctl *c = vgpu_channel_ctl(&mem, (uint32_t)i);
    uint64_t serving = vgpu_channel_word(VGPU_CHANNEL_SERVING, pid), began = vgpu_now_ns();
    while (__atomic_load_n(&c->claim, __ATOMIC_ACQUIRE) != serving) {
        uint64_t w = __atomic_load_n(&c->claim, __ATOMIC_ACQUIRE);
        if (w != claim_word || vgpu_now_ns() - began > HOST_TIMEOUT_NS ||
            vgpu_beat_stale(&host_beat, &h->beat, HOST_TIMEOUT_NS)) {
            vgpu_channel_release();
            return vgpu_fail(err, errlen,
                             "no executor serves channel %d of vGPU \"%s\" (%s): is the host's vgpu-executor --bar "
                             "running for it?",
                             i, h->vgpu, w != claim_word ? "its supervisor refused it" : "none came in 10 s");
        }
        struct timespec t = { 0, 200000 };
        nanosleep(&t, NULL);
    }
    claim_word = serving;
    size_t length;
    void *ring = vgpu_channel_ring(&mem, (uint32_t)i, &length);
    if (vgpu_ring_attach_at(r, ring, length) != 0) {
        vgpu_channel_release();
        return vgpu_fail(err, errlen, "channel %d of vGPU \"%s\" holds no ring its executor laid out", i, h->vgpu);
    }
    r->peer_gone = host_gone;
    r->peer_ctx = NULL;
    uint64_t ignored;
    char why[256];
    if (vgpu_ring_settings(&ignored, &r->spin, why, sizeof(why)) != 0)
        vgpu_warn("remote GPU: %s", why);
    vgpu_info("remote GPU: channel %d of vGPU \"%s\" (rings of 2 x %llu KiB)", i, h->vgpu,
              (unsigned long long)(r->tx.size >> 10));
    return 0;
}

int vgpu_channel_bulk_of(uint64_t *offset, uint64_t *size)
{
    int i = __atomic_load_n(&index_claimed, __ATOMIC_ACQUIRE);
    if (i < 0)
        return -1;
    *offset = vgpu_channel_bulk(&mem, (uint32_t)i, size);
    return mem_fd;
}

void vgpu_channel_release(void)
{
    int i = __atomic_exchange_n(&index_claimed, -1, __ATOMIC_ACQ_REL);
    if (i < 0)
        return;
    struct vgpu_channel_ctl *c = vgpu_channel_ctl(&mem, (uint32_t)i);
    uint64_t w = __atomic_load_n(&c->claim, __ATOMIC_ACQUIRE);
    /* Only a channel still this process's: a supervisor may have freed it
     * for another already (of the same pid in another PID namespace, too). */
    if ((w & ~(uint64_t)0xff) == (claim_word & ~(uint64_t)0xff) && vgpu_channel_state_of(w) != VGPU_CHANNEL_FREE &&
        __atomic_load_n(&c->pid_ns, __ATOMIC_RELAXED) == claim_ns)
        __atomic_compare_exchange_n(&c->claim, &w, (w & ~(uint64_t)0xff) | VGPU_CHANNEL_CLOSED, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

void vgpu_channel_forget(void)
{
    __atomic_store_n(&index_claimed, -1, __ATOMIC_RELEASE);
    beating = false; /* the thread is the parent's; the atexit handler is the child's too */
}
