/*
 * The shared-memory ring (forwarder/remote/transport/ring.c) between two processes,
 * as a guest and its executor use it:
 *
 * - stream: a child (the guest) sends messages of random lengths, longer
 *   than the stream as well as a byte, each with its checksum; the parent
 *   (the executor) echoes each back; the child checks every byte.  With
 *   4 KiB streams, positions wrap hundreds of times, and both sides wait:
 *   spinning first, or (stream-sleeping) sleeping every time.
 * - killed-mid-message: the child is killed with SIGKILL halfway through a
 *   message: the parent's read fails (ECONNRESET) instead of waiting.
 * - gone-between-messages: the child exits: the parent's read of the next
 *   message fails as at end of file (errno 0).
 * - corrupt-head / corrupt-tail: the child writes the ring's positions past
 *   what the streams hold, or back: the parent's read or write fails with
 *   EPROTO, and it never reads its own positions back (a child that
 *   overwrites them changes nothing of what the parent reads).
 *
 *   ring_test SCENARIO
 */
#define _GNU_SOURCE
#include "forwarder/remote/transport/ring.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define STREAM 4096u

static int failures;
/* Both ends' spin (stream-sleeping: none). */
static struct vgpu_ring_spin spin = { (uint64_t)VGPU_RING_DEFAULT_SPIN_US * 1000u,
                                      (uint64_t)VGPU_RING_DEFAULT_SPIN_MAX_US * 1000u };

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                       \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
            failures++;                                                                                                \
        }                                                                                                              \
    } while (0)

static uint64_t checksum(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* The executor's end and the guest's, in a parent and a child; the child
 * runs body and exits with its status. */
struct pair {
    struct vgpu_ring exec;
    pid_t child;
};

static void start(struct pair *p, int (*body)(struct vgpu_ring *))
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        perror("socketpair");
        exit(1);
    }
    int memfd = -1;
    if (vgpu_ring_create(&p->exec, STREAM, sv[0], &memfd) != 0) {
        perror("vgpu_ring_create");
        exit(1);
    }
    uint64_t length = p->exec.length;
    p->child = fork();
    if (p->child == 0) {
        close(sv[0]);
        vgpu_ring_detach(&p->exec);
        struct vgpu_ring guest;
        if (vgpu_ring_attach(&guest, memfd, length, sv[1]) != 0) {
            perror("vgpu_ring_attach");
            _exit(1);
        }
        close(memfd);
        guest.spin = spin;
        _exit(body(&guest));
    }
    close(sv[1]);
    close(memfd);
    p->exec.spin = spin;
}

static int finish(struct pair *p)
{
    int st = 0;
    waitpid(p->child, &st, 0);
    close(p->exec.peer_fd);
    vgpu_ring_detach(&p->exec);
    return st;
}

/* ---- stream ---- */

enum { MESSAGES = 3000 };

static int guest_stream(struct vgpu_ring *r)
{
    unsigned seed = 7;
    unsigned char *out = malloc(5 * STREAM), *back = malloc(5 * STREAM);
    int bad = 0;
    for (int m = 0; m < MESSAGES && !bad; m++) {
        uint64_t n = m % 100 == 0 ? 1 + (uint64_t)rand_r(&seed) % (4 * STREAM) : (uint64_t)rand_r(&seed) % 300;
        for (uint64_t i = 0; i < n; i++)
            out[i] = (unsigned char)rand_r(&seed);
        uint64_t head[2] = { n, checksum(out, n) };
        struct iovec v[2] = { { head, sizeof(head) }, { out, n } };
        uint64_t echo[2];
        if (vgpu_ring_write(r, v, 2) != 0 || vgpu_ring_read(r, echo, sizeof(echo)) != 0 ||
            vgpu_ring_read(r, back, n) != 0) {
            fprintf(stderr, "FAIL: guest: message %d: %s\n", m, strerror(errno));
            bad = 1;
        } else if (echo[0] != n || echo[1] != head[1] || memcmp(back, out, n) != 0) {
            fprintf(stderr, "FAIL: guest: message %d of %llu bytes came back changed\n", m, (unsigned long long)n);
            bad = 1;
        }
    }
    free(out);
    free(back);
    return bad;
}

static void stream(void)
{
    struct pair p;
    start(&p, guest_stream);
    unsigned char *buf = malloc(5 * STREAM);
    int m = 0;
    for (; m < MESSAGES; m++) {
        uint64_t head[2];
        if (vgpu_ring_read(&p.exec, head, sizeof(head)) != 0 || head[0] > 4 * STREAM ||
            vgpu_ring_read(&p.exec, buf, head[0]) != 0)
            break;
        CHECK(checksum(buf, head[0]) == head[1], "message %d of %llu bytes arrived changed", m,
              (unsigned long long)head[0]);
        struct iovec v[2] = { { head, sizeof(head) }, { buf, head[0] } };
        if (vgpu_ring_write(&p.exec, v, 2) != 0)
            break;
    }
    CHECK(m == MESSAGES, "the executor's end stopped at message %d: %s", m, strerror(errno));
    int st = finish(&p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the guest's end failed (status 0x%x)", st);
    printf("%d messages each way through 2 x %u bytes\n", m, STREAM);
    free(buf);
}

/* ---- the other side gone ---- */

static int guest_half_message(struct vgpu_ring *r)
{
    /* A header that promises more than is ever sent; then waits to be killed. */
    uint64_t head[2] = { 3 * STREAM, 0 };
    unsigned char part[100] = { 0 };
    struct iovec v[2] = { { head, sizeof(head) }, { part, sizeof(part) } };
    vgpu_ring_write(r, v, 2);
    pause();
    return 0;
}

static void killed_mid_message(void)
{
    struct pair p;
    start(&p, guest_half_message);
    uint64_t head[2];
    CHECK(vgpu_ring_read(&p.exec, head, sizeof(head)) == 0, "the header did not arrive: %s", strerror(errno));
    kill(p.child, SIGKILL);
    unsigned char *buf = malloc(3 * STREAM);
    errno = 0;
    int r = vgpu_ring_read(&p.exec, buf, head[0]);
    CHECK(r == -1 && errno == ECONNRESET, "reading the rest of a killed guest's message: %d (%s), want ECONNRESET", r,
          strerror(errno));
    finish(&p);
    free(buf);
    printf("a read of a message its guest was killed writing fails: ECONNRESET\n");
}

static int guest_one_message(struct vgpu_ring *r)
{
    uint64_t word = 42;
    struct iovec v = { &word, sizeof(word) };
    return vgpu_ring_write(r, &v, 1) != 0;
}

static void gone_between_messages(void)
{
    struct pair p;
    start(&p, guest_one_message);
    uint64_t word = 0;
    CHECK(vgpu_ring_read(&p.exec, &word, sizeof(word)) == 0 && word == 42, "the message did not arrive");
    errno = EINVAL;
    int r = vgpu_ring_read(&p.exec, &word, sizeof(word));
    CHECK(r == -1 && errno == 0, "reading after the guest exited: %d (%s), want end of file", r, strerror(errno));
    finish(&p);
    printf("a read after its guest exited ends as at end of file\n");
}

/* ---- positions broken by the guest ---- */

static int guest_corrupt_head(struct vgpu_ring *r)
{
    /* The request stream's head past what it holds; the executor's own
     * tail of it (which it must never read back) moved too. */
    __atomic_store_n(&r->shared->stream[VGPU_RING_TO_EXECUTOR].tail, 12345, __ATOMIC_RELEASE);
    __atomic_store_n(&r->shared->stream[VGPU_RING_TO_EXECUTOR].head, STREAM + 1, __ATOMIC_RELEASE);
    pause();
    return 0;
}

static int guest_corrupt_tail(struct vgpu_ring *r)
{
    /* The reply stream's tail ahead of what the executor wrote. */
    __atomic_store_n(&r->shared->stream[VGPU_RING_TO_GUEST].tail, 1u << 20, __ATOMIC_RELEASE);
    __atomic_store_n(&r->shared->stream[VGPU_RING_TO_GUEST].head, 99, __ATOMIC_RELEASE);
    pause();
    return 0;
}

static void corrupt(int (*body)(struct vgpu_ring *), bool reading)
{
    struct pair p;
    start(&p, body);
    usleep(100000); /* the child has written them */
    unsigned char buf[64] = { 0 };
    struct iovec v = { buf, sizeof(buf) };
    errno = 0;
    int r = reading ? vgpu_ring_read(&p.exec, buf, sizeof(buf)) : vgpu_ring_write(&p.exec, &v, 1);
    CHECK(r == -1 && errno == EPROTO, "%s a ring whose positions the guest broke: %d (%s), want EPROTO",
          reading ? "reading" : "writing", r, strerror(errno));
    CHECK(p.exec.rx.pos == 0 && p.exec.tx.pos == 0, "the executor's positions moved (%llu, %llu)",
          (unsigned long long)p.exec.rx.pos, (unsigned long long)p.exec.tx.pos);
    kill(p.child, SIGKILL);
    finish(&p);
    printf("%s a ring whose positions its guest broke fails: EPROTO\n", reading ? "reading" : "writing");
}

/* The spin's rules, µs: it follows the waits up to the most, falls back
 * at once when the other side was idle, comes down slowly, and stays put
 * where VGPU_REMOTE_SPIN_US fixed it. */
static void spin_follows_the_waits(void)
{
    static const struct vgpu_ring_spin adaptive = { 50000, 1000000 }, fixed = { 50000, 50000 };
    static const struct {
        const struct vgpu_ring_spin *spin;
        uint64_t prev, waited, want;
        const char *what;
    } cases[] = {
        { &adaptive, 0, 1000, 50000, "a quick answer: the least" },
        { &adaptive, 50000, 80000, 160000, "a wait past the spin: twice it" },
        { &adaptive, 160000, 90000, 180000, "a longer one: twice it" },
        { &adaptive, 160000, 700000, 1000000, "past half the most: the most" },
        { &adaptive, 1000000, 1000001, 50000, "the other side idle: the least at once" },
        { &adaptive, 800000, 0, 750000, "a quick answer: a sixteenth of the way down" },
        { &adaptive, 800000, 100000, 762500, "a shorter wait: a sixteenth of the way down to twice it" },
        { &adaptive, 51000, 0, 50000, "never below the least" },
        { &fixed, 0, 80000, 50000, "fixed: the least" },
        { &fixed, 50000, 20000000, 50000, "fixed, idle: the least" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t got = vgpu_ring_next_spin(cases[i].spin, cases[i].prev, cases[i].waited);
        CHECK(got == cases[i].want, "%s: %llu ns, not %llu", cases[i].what, (unsigned long long)got,
              (unsigned long long)cases[i].want);
    }
    uint64_t next = 0;
    for (int i = 0; i < 40; i++) /* calls 200 µs apart: the spin outlasts them */
        next = vgpu_ring_next_spin(&adaptive, next, 200000);
    CHECK(next == 400000, "after waits of 200 us the spin is %llu ns, not 400000", (unsigned long long)next);
    for (int i = 0; i < 8; i++) /* a burst of quick answers */
        next = vgpu_ring_next_spin(&adaptive, next, 1000);
    CHECK(next > 200000, "a burst of 8 quick answers took the spin down to %llu ns", (unsigned long long)next);

    /* What the environment sets (on a machine where this process may run
     * on more than one CPU). */
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0 || CPU_COUNT(&cpus) < 2) {
        printf("one CPU: the settings' spins not checked\n");
        return;
    }
    static const struct {
        const char *spin, *most;
        uint64_t least_ns, most_ns;
    } settings[] = {
        { NULL, NULL, 50000, 1000000 },   { "200", NULL, 200000, 200000 }, { NULL, "300", 50000, 300000 },
        { "100", "400", 100000, 400000 }, { "100", "20", 100000, 100000 }, { "0", NULL, 0, 0 },
    };
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
        struct vgpu_ring_spin got;
        uint64_t bytes;
        char err[256];
        settings[i].spin ? setenv("VGPU_REMOTE_SPIN_US", settings[i].spin, 1) : unsetenv("VGPU_REMOTE_SPIN_US");
        settings[i].most ? setenv("VGPU_REMOTE_SPIN_MAX_US", settings[i].most, 1) : unsetenv("VGPU_REMOTE_SPIN_MAX_US");
        CHECK(vgpu_ring_settings(&bytes, &got, err, sizeof(err)) == 0, "settings %zu refused: %s", i, err);
        CHECK(got.least_ns == settings[i].least_ns && got.most_ns == settings[i].most_ns,
              "VGPU_REMOTE_SPIN_US=%s VGPU_REMOTE_SPIN_MAX_US=%s: %llu to %llu ns, not %llu to %llu",
              settings[i].spin ? settings[i].spin : "(unset)", settings[i].most ? settings[i].most : "(unset)",
              (unsigned long long)got.least_ns, (unsigned long long)got.most_ns,
              (unsigned long long)settings[i].least_ns, (unsigned long long)settings[i].most_ns);
    }
    unsetenv("VGPU_REMOTE_SPIN_US");
    unsetenv("VGPU_REMOTE_SPIN_MAX_US");
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (strcmp(s, "stream") == 0)
        stream();
    else if (strcmp(s, "stream-sleeping") == 0)
        spin = (struct vgpu_ring_spin){ 0, 0 }, stream();
    else if (strcmp(s, "spin-follows-the-waits") == 0)
        spin_follows_the_waits();
    else if (strcmp(s, "killed-mid-message") == 0)
        killed_mid_message();
    else if (strcmp(s, "gone-between-messages") == 0)
        gone_between_messages();
    else if (strcmp(s, "corrupt-head") == 0)
        corrupt(guest_corrupt_head, true);
    else if (strcmp(s, "corrupt-tail") == 0)
        corrupt(guest_corrupt_tail, false);
    else {
        fprintf(stderr, "usage: ring_test "
                        "stream|stream-sleeping|killed-mid-message|gone-between-messages|corrupt-head|corrupt-tail|"
                        "spin-follows-the-waits\n");
        return 2;
    }
    return failures ? 1 : 0;
}
