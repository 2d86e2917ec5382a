/* The shared-memory ring between a guest and its executor (ring.h). */
#define _GNU_SOURCE
#include "forwarder/remote/transport/ring.h"

#include "common/clock.h"
#include "common/error.h"
#include "forwarder/remote/transport/shm.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u
/* A sleeper looks at the socket this often, to tell that the other side is gone. */
#define SLEEP_NS 20000000L

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void futex_wait(uint32_t *word, uint32_t seen)
{
    struct timespec t = { 0, SLEEP_NS };
    syscall(SYS_futex, word, FUTEX_WAIT, seen, &t, NULL, 0);
}

static void futex_wake(uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Whether the other side is gone: its socket hung up.  (Something to
 * read is not: a shared block's memfd crosses there.) */
static bool peer_gone(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLRDHUP };
    return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Longest sleep of a polling wait, which sleeps a thirty-second of what
 * it waited so far: a wait of T ends at most T/32 late, and a side idle
 * for long wakes 200 times a second. */
#define POLL_MIN_NS 5000u
#define POLL_MAX_NS 5000000u

/* After the spin, with no socket: polls *word until it is no longer seen,
 * asking peer_gone after each sleep.  0, or -1 when the other side is gone. */
static int poll_for(struct vgpu_ring *r, uint64_t *word, uint64_t seen, uint64_t start)
{
    for (;;) {
        uint64_t waited = vgpu_now_ns() - start, ns = waited / 32;
        ns = ns < POLL_MIN_NS ? POLL_MIN_NS : ns > POLL_MAX_NS ? POLL_MAX_NS : ns;
        struct timespec t = { 0, (long)ns };
        nanosleep(&t, NULL);
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != seen)
            return 0;
        if (r->peer_gone(r->peer_ctx))
            return __atomic_load_n(word, __ATOMIC_ACQUIRE) != seen ? 0 : -1;
    }
}

/* After the spin, with a socket: sleeps on seq until *word is no longer
 * seen, saying so in *sleeps.  0, or -1 when the other side is gone. */
static int sleep_for(struct vgpu_ring *r, uint64_t *word, uint64_t seen, uint32_t *seq, uint32_t *sleeps)
{
    for (;;) {
        uint32_t s = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
        __atomic_store_n(sleeps, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(word, __ATOMIC_SEQ_CST) == seen)
            futex_wait(seq, s);
        __atomic_store_n(sleeps, 0, __ATOMIC_RELAXED);
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != seen)
            return 0;
        /* What it wrote before it went is still to be read. */
        if (peer_gone(r->peer_fd))
            return __atomic_load_n(word, __ATOMIC_ACQUIRE) != seen ? 0 : -1;
    }
}

uint64_t vgpu_ring_next_spin(const struct vgpu_ring_spin *spin, uint64_t prev, uint64_t waited)
{
    uint64_t least = spin->least_ns, most = spin->most_ns, next;
    if (most <= least || waited > most)
        next = least;
    else if (2 * waited >= prev)
        next = 2 * waited;
    else
        next = prev - (prev - 2 * waited) / 16;
    return next < least ? least : next > most ? most : next;
}

static void adapt(struct vgpu_ring *r, uint64_t waited)
{
    r->spin_next_ns = vgpu_ring_next_spin(&r->spin, r->spin_next_ns, waited);
}

/* Waits until *word, the other side's position, is no longer seen: spins
 * (vgpu_ring_next_spin; a reader's waits, for the other side's next
 * message, set the next spin, a writer's, for room, do not), then sleeps
 * on seq, saying so in *sleeps (or polls, with no socket).  0, or -1 when
 * the other side is gone. */
static int wait_for(struct vgpu_ring *r, uint64_t *word, uint64_t seen, uint32_t *seq, uint32_t *sleeps,
                    bool reader)
{
    uint64_t start = vgpu_now_ns(), spin = r->spin_next_ns > r->spin.least_ns ? r->spin_next_ns : r->spin.least_ns;
    int gone = 0;
    for (unsigned i = 1;; i++) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != seen)
            break;
        if (!(i & 63) && vgpu_now_ns() - start >= spin) {
            gone = r->peer_gone ? poll_for(r, word, seen, start) : sleep_for(r, word, seen, seq, sleeps);
            break;
        }
        cpu_relax();
    }
    if (reader)
        adapt(r, vgpu_now_ns() - start);
    return gone;
}

/* Stores a position for the other side to see, and wakes it if it sleeps
 * on seq. */
static void publish(uint64_t *word, uint64_t pos, uint32_t *seq, uint32_t *sleeps)
{
    /* Both seq_cst, as the sleeper's store of sleeps and load of the word
     * are: one of the two sees the other's store (no fence: ThreadSanitizer
     * does not take them). */
    __atomic_store_n(word, pos, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(sleeps, __ATOMIC_SEQ_CST)) {
        __atomic_fetch_add(seq, 1, __ATOMIC_RELEASE);
        futex_wake(seq);
    }
}

static void publish_head(struct vgpu_ring_end *e)
{
    if (e->published != e->pos) {
        e->published = e->pos;
        publish(&e->s->head, e->pos, &e->s->data_seq, &e->s->consumer_sleeps);
    }
}

static void publish_tail(struct vgpu_ring_end *e)
{
    if (e->published != e->pos) {
        e->published = e->pos;
        publish(&e->s->tail, e->pos, &e->s->space_seq, &e->s->producer_sleeps);
    }
}

int vgpu_ring_write(struct vgpu_ring *r, const struct iovec *iov, int n)
{
    struct vgpu_ring_end *e = &r->tx;
    /* Memory that may be someone else's once the other side is gone (a
     * channel freed for another process) is not written. */
    if (r->peer_gone && r->peer_gone(r->peer_ctx)) {
        errno = ECONNRESET;
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const unsigned char *p = iov[i].iov_base;
        size_t left = iov[i].iov_len;
        while (left) {
            uint64_t tail = __atomic_load_n(&e->s->tail, __ATOMIC_ACQUIRE);
            if (e->pos - tail > e->size) { /* the other side's position is past what was written */
                errno = EPROTO;
                return -1;
            }
            uint64_t room = e->size - (e->pos - tail);
            if (!room) {
                publish_head(e);
                uint64_t began = vgpu_now_ns();
                if (wait_for(r, &e->s->tail, tail, &e->s->space_seq, &e->s->producer_sleeps, false) != 0) {
                    errno = ECONNRESET;
                    return -1;
                }
                r->full_ns += vgpu_now_ns() - began;
                continue;
            }
            uint64_t at = e->pos & (e->size - 1), c = left < room ? left : room;
            uint64_t first = c < e->size - at ? c : e->size - at;
            memcpy(e->data + at, p, first);
            memcpy(e->data, p + first, c - first);
            e->pos += c;
            p += c;
            left -= c;
        }
    }
    publish_head(e);
    return 0;
}

int vgpu_ring_read(struct vgpu_ring *r, void *dst, size_t len)
{
    struct vgpu_ring_end *e = &r->rx;
    unsigned char *p = dst;
    size_t done = 0;
    while (done < len) {
        uint64_t head = __atomic_load_n(&e->s->head, __ATOMIC_ACQUIRE);
        if (head - e->pos > e->size) { /* more written than the stream holds, or a head gone back */
            errno = EPROTO;
            return -1;
        }
        uint64_t avail = head - e->pos;
        if (!avail) {
            publish_tail(e); /* room for the rest of a long message */
            if (wait_for(r, &e->s->head, head, &e->s->data_seq, &e->s->consumer_sleeps, true) != 0) {
                errno = done ? ECONNRESET : 0;
                return -1;
            }
            continue;
        }
        uint64_t at = e->pos & (e->size - 1), c = len - done < avail ? len - done : avail;
        uint64_t first = c < e->size - at ? c : e->size - at;
        memcpy(p + done, e->data + at, first);
        memcpy(p + done + first, e->data, c - first);
        e->pos += c;
        done += c;
    }
    publish_tail(e);
    return 0;
}

/* The ends of the side that writes stream writes, whose offsets and sizes
 * are off and size (the executor's own values, never read back). */
static void set_ends(struct vgpu_ring *r, int writes, const uint64_t off[2], const uint64_t size[2], int peer_fd)
{
    struct vgpu_ring_shared *h = r->shared;
    struct vgpu_ring_end *ends[2] = { &r->tx, &r->rx };
    int which[2] = { writes, !writes };
    for (int i = 0; i < 2; i++)
        *ends[i] = (struct vgpu_ring_end){ .s = &h->stream[which[i]],
                                           .data = (unsigned char *)h + off[which[i]],
                                           .size = size[which[i]] };
    r->peer_fd = peer_fd;
    r->spin = (struct vgpu_ring_spin){ (uint64_t)VGPU_RING_DEFAULT_SPIN_US * 1000u,
                                       (uint64_t)VGPU_RING_DEFAULT_SPIN_MAX_US * 1000u };
    r->spin_next_ns = 0;
}

/* Lays out h (length bytes) as a ring of two streams of stream_bytes: the
 * executor's end of it. */
static void lay_out(struct vgpu_ring *r, struct vgpu_ring_shared *h, size_t length, uint64_t stream_bytes,
                    int peer_fd)
{
    uint64_t off[2], size[2];
    memset(h, 0, sizeof(*h));
    h->version = VGPU_RING_VERSION;
    for (int i = 0; i < 2; i++) {
        h->offset[i] = off[i] = PAGE + (uint64_t)i * stream_bytes;
        h->size[i] = size[i] = stream_bytes;
    }
    __atomic_store_n(&h->magic, VGPU_RING_MAGIC, __ATOMIC_RELEASE);
    *r = (struct vgpu_ring){ .shared = h, .length = length };
    set_ends(r, VGPU_RING_TO_GUEST, off, size, peer_fd);
}

static bool stream_size_ok(uint64_t b)
{
    return b >= PAGE && !(b & (b - 1)) && b <= (uint64_t)VGPU_RING_MAX_MIB << 20;
}

int vgpu_ring_create(struct vgpu_ring *r, uint64_t stream_bytes, int peer_fd, int *memfd)
{
    if (!stream_size_ok(stream_bytes)) {
        errno = EINVAL;
        return -1;
    }
    size_t length = PAGE + 2 * stream_bytes;
    int fd;
    /* Sealed before the guest has it: it can neither shrink the memory
     * under the executor (which would fault there) nor grow it. */
    struct vgpu_ring_shared *h = vgpu_shm_sealed("vgpu-ring", length, NULL, &fd);
    if (h == MAP_FAILED)
        return -1;
    lay_out(r, h, length, stream_bytes, peer_fd);
    *memfd = fd;
    return 0;
}

int vgpu_ring_format(struct vgpu_ring *r, void *memory, size_t length, uint64_t stream_bytes)
{
    if (!stream_bytes) /* the largest power of two that two of fit */
        for (stream_bytes = (uint64_t)VGPU_RING_MAX_MIB << 20; stream_bytes >= PAGE && PAGE + 2 * stream_bytes > length;)
            stream_bytes >>= 1;
    if (!stream_size_ok(stream_bytes) || length < PAGE + 2 * stream_bytes || ((uintptr_t)memory & (PAGE - 1))) {
        errno = EINVAL;
        return -1;
    }
    lay_out(r, memory, 0, stream_bytes, -1);
    return 0;
}

/* The guest's end of the ring the executor laid out in h (length bytes);
 * 0, or -1 with EPROTO. */
static int check(struct vgpu_ring *r, struct vgpu_ring_shared *h, uint64_t length, int peer_fd)
{
    bool ok = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == VGPU_RING_MAGIC && h->version == VGPU_RING_VERSION;
    uint64_t off[2], size[2];
    for (int i = 0; ok && i < 2; i++) {
        off[i] = h->offset[i];
        size[i] = h->size[i];
        ok = size[i] >= PAGE && !(size[i] & (size[i] - 1)) && off[i] >= PAGE && off[i] <= length &&
             size[i] <= length - off[i] && h->stream[i].head == 0 && h->stream[i].tail == 0;
    }
    /* The two streams do not overlap: one ends before the other begins. */
    const uint64_t *to_exec = &off[VGPU_RING_TO_EXECUTOR], *to_guest = &off[VGPU_RING_TO_GUEST];
    ok = ok && (*to_exec + size[VGPU_RING_TO_EXECUTOR] <= *to_guest || *to_guest + size[VGPU_RING_TO_GUEST] <= *to_exec);
    if (!ok) {
        errno = EPROTO;
        return -1;
    }
    *r = (struct vgpu_ring){ .shared = h, .length = length };
    set_ends(r, VGPU_RING_TO_EXECUTOR, off, size, peer_fd);
    return 0;
}

int vgpu_ring_attach(struct vgpu_ring *r, int memfd, uint64_t length, int peer_fd)
{
    struct stat st;
    if (fstat(memfd, &st) != 0)
        return -1;
    if ((uint64_t)st.st_size != length || length < PAGE || length > PAGE + 2 * ((uint64_t)VGPU_RING_MAX_MIB << 20)) {
        errno = EPROTO;
        return -1;
    }
    struct vgpu_ring_shared *h = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (h == MAP_FAILED)
        return -1;
    if (check(r, h, length, peer_fd) != 0) {
        munmap(h, length);
        errno = EPROTO;
        return -1;
    }
    return 0;
}

int vgpu_ring_attach_at(struct vgpu_ring *r, void *memory, size_t length)
{
    if (check(r, memory, length, -1) != 0)
        return -1;
    r->length = 0;
    return 0;
}

void vgpu_ring_detach(struct vgpu_ring *r)
{
    if (r->shared && r->length)
        munmap(r->shared, r->length);
    r->shared = NULL;
}

/* An unsigned number of at most most; false for anything else. */
static bool number(const char *s, unsigned long most, unsigned long *v)
{
    char *end;
    errno = 0;
    *v = strtoul(s, &end, 10);
    return *s >= '0' && *s <= '9' && !*end && !errno && *v <= most;
}

int vgpu_ring_settings(uint64_t *stream_bytes, struct vgpu_ring_spin *waits, char *err, size_t errlen)
{
    const char *t = getenv("VGPU_REMOTE_TRANSPORT"), *mib = getenv("VGPU_REMOTE_RING_MIB"),
               *spin = getenv("VGPU_REMOTE_SPIN_US"), *most = getenv("VGPU_REMOTE_SPIN_MAX_US");
    unsigned long v;
    int r = 0;
    *stream_bytes = (uint64_t)VGPU_RING_DEFAULT_MIB << 20;
    *waits = (struct vgpu_ring_spin){ (uint64_t)VGPU_RING_DEFAULT_SPIN_US * 1000u,
                                        (uint64_t)VGPU_RING_DEFAULT_SPIN_MAX_US * 1000u };
    if (mib && *mib) {
        if (number(mib, VGPU_RING_MAX_MIB, &v) && v && !(v & (v - 1)))
            *stream_bytes = (uint64_t)v << 20;
        else
            r = vgpu_fail(err, errlen, "VGPU_REMOTE_RING_MIB=%s is not a power of two from 1 to %u: %u taken", mib,
                          VGPU_RING_MAX_MIB, VGPU_RING_DEFAULT_MIB);
    }
    if (spin && *spin) {
        if (number(spin, 1000000, &v))
            waits->least_ns = waits->most_ns = (uint64_t)v * 1000u;
        else
            r = vgpu_fail(err, errlen, "VGPU_REMOTE_SPIN_US=%s is not a number of microseconds up to 1000000: %u taken",
                          spin, VGPU_RING_DEFAULT_SPIN_US);
    }
    if (most && *most) {
        if (number(most, 1000000, &v))
            waits->most_ns = (uint64_t)v * 1000u > waits->least_ns ? (uint64_t)v * 1000u : waits->least_ns;
        else
            r = vgpu_fail(err, errlen,
                          "VGPU_REMOTE_SPIN_MAX_US=%s is not a number of microseconds up to 1000000: the spin's "
                          "most left as it was",
                          most);
    }
    /* A process that may run on one CPU only would spin while the other
     * side, which it waits for, cannot run. */
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) < 2)
        waits->most_ns = waits->least_ns;
    if (t && *t && strcmp(t, "ring") != 0) {
        if (strcmp(t, "socket") == 0)
            *stream_bytes = 0;
        else
            r = vgpu_fail(err, errlen, "VGPU_REMOTE_TRANSPORT=%s is neither ring nor socket: the ring taken", t);
    }
    return r;
}
