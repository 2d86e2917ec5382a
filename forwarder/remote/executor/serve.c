/* One guest's executor: the handle set and the loop of calls (executor.h). */
#define _GNU_SOURCE
#include "forwarder/remote/executor/executor.h"
#include "forwarder/remote/executor/image_cache.h"

#include "common/log.h"
#include "forwarder/remote/transport/ring.h"
#include "forwarder/remote/transport/wire.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The guest's HELLO: which library it drives, at which ABI; that library
 * loaded.  0, or -1 having said why. */
/* The executor's own name: "r:" and its guest's command's (printable
 * characters only), so that the host's listings (vgpu-smi, ps) say whose
 * calls it makes. */
static void take_name(const char *comm)
{
    char name[16] = "r:";
    size_t n = 2;
    for (size_t i = 0; i < 15 && comm[i] && n < 15; i++)
        name[n++] = comm[i] > 0x20 && comm[i] < 0x7f ? comm[i] : '_';
    name[n] = 0;
    prctl(PR_SET_NAME, name);
}

/* The guest's CUDA_VISIBLE_DEVICES (value, rewritten in place) as a choice
 * among the executor's own: an index is the executor's entry at it, a name
 * (a UUID) stands if the executor's list has it; as the driver does, the
 * list ends at the first entry that is neither. */
static void among(const char *own, char *value, size_t size)
{
    char mine[VGPU_REMOTE_ENV_BYTES], *entry[64], out[VGPU_REMOTE_ENV_BYTES] = "";
    int n = 0;
    snprintf(mine, sizeof(mine), "%s", own);
    for (char *save = NULL, *t = strtok_r(mine, ",", &save); t && n < 64; t = strtok_r(NULL, ",", &save))
        entry[n++] = t;
    size_t used = 0;
    char *save = NULL;
    for (char *t = strtok_r(value, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        long i = strtol(t, &end, 10);
        const char *pick = NULL;
        if (*t && !*end)
            pick = i >= 0 && i < n ? entry[i] : NULL;
        else
            for (int k = 0; !pick && k < n; k++)
                pick = strcmp(entry[k], t) == 0 ? entry[k] : NULL;
        if (!pick)
            break;
        int w = snprintf(out + used, sizeof(out) - used, "%s%s", used ? "," : "", pick);
        if (w < 0 || (size_t)w >= sizeof(out) - used)
            break;
        used += (size_t)w;
    }
    snprintf(value, size, "%s", out);
}

/* The guest's driver settings (wire.h): each NAME=VALUE of env's n bytes
 * whose name is one of them and whose value is plain (letters, digits and
 * ",-_:."), taken into this process's environment before its driver
 * starts; vgpu's backend here then holds them within the vGPU, as it does
 * a local process's.  Others are refused, said. */
static void take_settings(const char *env, size_t n)
{
    static const char *const names[] = VGPU_REMOTE_ENV_NAMES;
    for (size_t at = 0; at < n;) {
        const char *e = env + at, *end = memchr(e, 0, n - at), *eq = end ? memchr(e, '=', (size_t)(end - e)) : NULL;
        if (!end)
            break;
        at = (size_t)(end - env) + 1;
        bool known = false;
        for (size_t i = 0; eq && i < sizeof(names) / sizeof(*names); i++)
            known = known || (strlen(names[i]) == (size_t)(eq - e) && memcmp(names[i], e, (size_t)(eq - e)) == 0);
        bool plain = eq != NULL;
        for (const char *c = eq ? eq + 1 : e; plain && c < end; c++)
            plain = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                    strchr(",-_:.", *c);
        if (!known || !plain) {
            char shown[65]; /* the guest's bytes, printable: no line of the log is the guest's to write */
            size_t k = 0;
            for (; k < sizeof(shown) - 1 && e[k]; k++)
                shown[k] = e[k] >= 0x20 && e[k] < 0x7f ? e[k] : '?';
            shown[k] = 0;
            vgpu_warn("executor: the guest's setting \"%s\" is not one it may give: ignored", shown);
            continue;
        }
        char name[64], value[VGPU_REMOTE_ENV_BYTES];
        snprintf(name, sizeof(name), "%.*s", (int)(eq - e), e);
        snprintf(value, sizeof(value), "%s", eq + 1);
        const char *own = strcmp(name, "CUDA_VISIBLE_DEVICES") == 0 ? getenv(name) : NULL;
        if (own)
            among(own, value, sizeof(value));
        setenv(name, value, 1);
        vgpu_info("executor: the guest's %s%s%s", e, own ? ", among the executor's own: " : "", own ? value : "");
    }
}

static int hello(struct vgpu_exec *x)
{
    struct vgpu_remote_hdr h;
    struct vgpu_remote_hello hi;
    char env[VGPU_REMOTE_ENV_BYTES];
    size_t fixed = sizeof(hi);
    if (vgpu_wire_read_hdr(&x->wire, &h) != 0 || h.type != VGPU_REMOTE_HELLO || h.len < fixed ||
        h.len > fixed + sizeof(env) || vgpu_wire_read(&x->wire, &hi, sizeof(hi)) != 0 ||
        (h.len > fixed && vgpu_wire_read(&x->wire, env, h.len - fixed) != 0)) {
        vgpu_error("executor: the guest did not say hello: closing");
        return -1;
    }
    const struct vgpu_exec_library *lib = hi.library == vgpu_exec_cuda.id   ? &vgpu_exec_cuda
                                          : hi.library == vgpu_exec_nvml.id ? &vgpu_exec_nvml
                                                                            : NULL;
    if (!lib || hi.hash != lib->hash) {
        vgpu_error("executor: guest %llu speaks another version of the remote ABI (library %llu, %016llx): "
                   "refused; guest and executor must come from one vgpu build",
                   (unsigned long long)hi.pid, (unsigned long long)hi.library, (unsigned long long)hi.hash);
        vgpu_wire_send(&x->wire, VGPU_REMOTE_REPLY, lib ? (uint32_t)lib->not_supported : 1u, 0, NULL, 0);
        return -1;
    }
    x->lib = lib;
    if (lib->id == vgpu_exec_cuda.id)
        take_settings(env, h.len - fixed);
    x->fn = calloc(lib->count, sizeof(*x->fn));
    x->driver = x->fn ? dlopen(lib->driver, RTLD_NOW | RTLD_GLOBAL) : NULL;
    if (!x->driver) {
        vgpu_error("executor: cannot load %s for guest %llu: %s", lib->driver, (unsigned long long)hi.pid,
                   x->fn ? dlerror() : "out of memory");
        vgpu_wire_send(&x->wire, VGPU_REMOTE_REPLY, (uint32_t)lib->not_supported, 0, NULL, 0);
        return -1;
    }
    hi.comm[sizeof(hi.comm) - 1] = 0;
    take_name(hi.comm);
    char shown[16];
    prctl(PR_GET_NAME, shown);
    vgpu_info("executor: serving guest process %llu (%s) as %s (%s)", (unsigned long long)hi.pid, shown + 2,
              shown, lib->driver);
    /* The window of addresses shared blocks take (shared_host.c), before
     * the driver reserves its own. */
    struct vgpu_remote_welcome w = { 0 }; /* and the executor's flags: its cache of module images */
    if (lib->id == vgpu_exec_cuda.id && (x->wire.fd >= 0 || x->bulk.fd >= 0))
        vgpu_exec_reserve_window(x, &w.window, &w.window_size);
    if (lib->id == vgpu_exec_cuda.id && vgpu_exec_cache_open())
        w.flags |= VGPU_REMOTE_HELLO_IMAGE_CACHE;
    struct iovec v = { &w, sizeof(w) };
    return vgpu_exec_reply(x, 0, &v, 1);
}

/* The descriptor that follows a call flagged VGPU_REMOTE_FD_IN on the
 * socket, into x->passed_fd: 0, or -1 (it did not follow). */
static int take_passed_fd(struct vgpu_exec *x, const char *name)
{
    struct vgpu_remote_hdr h;
    int fd = -1;
    if (vgpu_wire_read_hdr_fd(x->wire.fd, &h, &fd) != 0 || h.type != VGPU_REMOTE_CALL || h.len != 0 || fd < 0) {
        vgpu_error("executor: %s's file descriptor did not follow on the socket: closing", name);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    x->passed_fd = fd;
    return 0;
}

int vgpu_exec_one(struct vgpu_exec *x, const struct vgpu_remote_hdr *h, void *payload)
{
    if (h->type != VGPU_REMOTE_CALL || h->call >= x->lib->count) {
        vgpu_error("executor: a message that is not a call of the driver (type %u, call %u): closing",
                   (unsigned)h->type, (unsigned)h->call);
        return VGPU_EXEC_CLOSE;
    }
    const struct vgpu_exec_call *c = &x->lib->table[h->call];
    const char *name = x->lib->names[h->call];
    /* A copy to or from a shared block (shared_host.c), and a load whose
     * image is named by its hash (image_cache.h): only the calls the spec
     * says may come so. */
    bool shared = (h->flags & VGPU_REMOTE_SHARED) != 0;
    if (shared && !c->shared) {
        vgpu_error("executor: %s sent as a copy of shared memory, which it is not: closing", name);
        return VGPU_EXEC_CLOSE;
    }
    bool by_hash = (h->flags & VGPU_REMOTE_BY_HASH) != 0;
    if (by_hash && (!c->by_hash || (h->flags & VGPU_REMOTE_ASYNC))) {
        vgpu_error("executor: %s sent with its image named by hash, which it has not: closing", name);
        return VGPU_EXEC_CLOSE;
    }
    if ((h->flags & VGPU_REMOTE_ASYNC) && !c->async && !(shared && c->async_shared)) {
        vgpu_error("executor: %s sent without waiting for its answer, which it needs: closing", name);
        return VGPU_EXEC_CLOSE;
    }
    if ((h->flags & (VGPU_REMOTE_FD_IN | VGPU_REMOTE_FD_OUT)) &&
        (!c->manual || (h->flags & VGPU_REMOTE_ASYNC) || x->wire.fd < 0)) {
        vgpu_error("executor: %s sent with a file descriptor, which it takes none of: closing", name);
        return VGPU_EXEC_CLOSE;
    }
    if ((h->flags & VGPU_REMOTE_FD_IN) && take_passed_fd(x, name) != 0)
        return VGPU_EXEC_CLOSE;
    x->fd_wanted = (h->flags & VGPU_REMOTE_FD_OUT) != 0;
    x->async = (h->flags & VGPU_REMOTE_ASYNC) != 0;
    x->shared_host = shared;
    x->by_hash = by_hash;
    x->sync = c->sync;
    x->call = x->lib->names[h->call];
    void *fn = vgpu_exec_function(x, h->call);
    int sent;
    if (!c->words && !c->manual) {
        sent = vgpu_exec_reply(x, x->lib->not_supported, NULL, 0);
    } else if (!fn) {
        sent = vgpu_exec_reply(x, x->lib->not_found, NULL, 0);
    } else if (c->manual) {
        sent = c->manual(x, fn, payload, h->len);
    } else {
        if (h->len != c->nin * sizeof(uint64_t)) {
            vgpu_error("executor: %s with %llu bytes of arguments, not %u: closing", x->lib->names[h->call],
                       (unsigned long long)h->len, c->nin * 8);
            return VGPU_EXEC_CLOSE;
        }
        uint64_t out[8] = { 0 };
        int r = c->words(x, fn, payload, out);
        struct iovec v = { out, r == 0 ? c->nout * sizeof(uint64_t) : 0 };
        sent = vgpu_exec_reply(x, r, &v, 1);
    }
    if (x->passed_fd >= 0)
        close(x->passed_fd);
    x->passed_fd = -1;
    return sent;
}

/* The guest's RING (wire.h): the shared-memory ring made, its memfd sent
 * over the socket, and every message after on the ring.  0; -1 when the
 * guest is gone; VGPU_EXEC_CLOSE when it asks twice or wrongly. */
static int give_ring(struct vgpu_exec *x, struct vgpu_ring *ring, const struct vgpu_remote_hdr *h, const void *payload)
{
    struct vgpu_remote_ring_request rq;
    if (x->wire.ring || x->wire.fd < 0 || h->len != sizeof(rq)) {
        vgpu_error("executor: a malformed request for a shared-memory ring (%llu bytes%s): closing",
                   (unsigned long long)h->len, x->wire.ring ? ", on the ring already" : "");
        return VGPU_EXEC_CLOSE;
    }
    memcpy(&rq, payload, sizeof(rq));
    uint64_t want = rq.bytes, ignored;
    struct vgpu_ring_spin spin;
    char why[256];
    if (vgpu_ring_settings(&ignored, &spin, why, sizeof(why)) != 0)
        vgpu_warn("executor: %s", why);
    int memfd = -1;
    if (vgpu_ring_create(ring, want, x->wire.fd, &memfd) != 0) {
        vgpu_warn("executor: no shared-memory ring of 2 x %llu bytes for the guest (%s): its calls go through the "
                  "socket",
                  (unsigned long long)want, strerror(errno));
        return vgpu_wire_send_fd(x->wire.fd, VGPU_REMOTE_REPLY, (uint32_t)x->lib->not_supported, NULL, 0, -1);
    }
    ring->spin = spin;
    uint64_t length = ring->length;
    struct iovec v = { &length, sizeof(length) };
    int sent = vgpu_wire_send_fd(x->wire.fd, VGPU_REMOTE_REPLY, 0, &v, 1, memfd);
    close(memfd);
    x->wire.ring = ring;
    vgpu_debug("executor: the guest's calls come through a shared-memory ring of 2 x %llu MiB",
               (unsigned long long)(want >> 20));
    return sent;
}

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Waits until at least want bytes wait on socket fd, or the deadline (a
 * now_ms() time) passed: 1, 0 (too late), -1 (the peer hung up first). */
static int arrived(int fd, size_t want, uint64_t deadline)
{
    for (;;) {
        int have = 0;
        if (ioctl(fd, FIONREAD, &have) != 0)
            return -1;
        if ((size_t)have >= want)
            return 1;
        uint64_t now = now_ms();
        if (now >= deadline)
            return 0;
        struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
        int r = poll(&p, 1, (int)(deadline - now));
        if (r < 0 && errno != EINTR)
            return -1;
        if (r > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) && ioctl(fd, FIONREAD, &have) == 0 &&
            (size_t)have < want)
            return -1;
    }
}

/* Whether a whole HELLO arrives on socket fd within VGPU_EXEC_HELLO_MS: a
 * guest that says nothing, or says it a byte at a time, holds an executor
 * (a process the mediator started for it) no longer (docs/guide/remote.md,
 * "Executors' limits").  Not a socket (a test's pipe): true. */
static bool hello_in_time(int fd)
{
    uint64_t deadline = now_ms() + VGPU_EXEC_HELLO_MS;
    struct vgpu_remote_hdr h;
    int type = 0;
    socklen_t len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
        return true;
    int r = arrived(fd, sizeof(h), deadline);
    if (r < 0)
        return true; /* gone: hello() says so */
    if (r == 0 || recv(fd, &h, sizeof(h), MSG_PEEK) != (ssize_t)sizeof(h))
        return false;
    if (h.len > sizeof(struct vgpu_remote_hello) + VGPU_REMOTE_ENV_BYTES)
        return true; /* no hello: hello() says so */
    return arrived(fd, sizeof(h) + h.len, deadline) != 0;
}

int vgpu_exec_serve(int fd)
{
    /* A connection handed over by the mediator comes non-blocking (its loop's). */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK))
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (!hello_in_time(fd)) {
        vgpu_error("executor: the guest said no hello within %d s: closing", VGPU_EXEC_HELLO_MS / 1000);
        return 1;
    }
    return vgpu_exec_serve_wire(&(struct vgpu_wire){ .fd = fd }, NULL);
}

/* Waits for the message's turn among the guest's lanes (wire.h's order):
 * an asynchronous call after every asynchronous call numbered before it,
 * anything else after the count it names; 0 waits for nothing.  Only
 * another lane's message can end the wait: a guest that numbers them
 * wrongly holds its own lanes, no other guest's. */
static bool await_turn(struct vgpu_exec_session *s, const struct vgpu_remote_hdr *h)
{
    bool async = h->type == VGPU_REMOTE_CALL && (h->flags & VGPU_REMOTE_ASYNC);
    uint64_t after = async && h->order ? h->order - 1 : h->order;
    if (!after)
        return true;
    pthread_mutex_lock(&s->mu);
    while (s->made < after && !s->lost)
        pthread_cond_wait(&s->turn, &s->mu);
    bool turn = !s->lost;
    pthread_mutex_unlock(&s->mu);
    return turn;
}

/* A lane ended before it made every message sent on it: a number the
 * others may wait for never comes.  Every lane's wait ends, and the first
 * connection is shut, so the guest's calls fail (as when an executor ends)
 * instead of waiting for good. */
static void lose(struct vgpu_exec_session *s)
{
    pthread_mutex_lock(&s->mu);
    s->lost = true;
    pthread_cond_broadcast(&s->turn);
    pthread_mutex_unlock(&s->mu);
    if (s->first_fd >= 0)
        shutdown(s->first_fd, SHUT_RDWR);
}

/* After an asynchronous call numbered order (none: 0) was made. */
static void made(struct vgpu_exec_session *s, const struct vgpu_remote_hdr *h)
{
    if (h->type != VGPU_REMOTE_CALL || !(h->flags & VGPU_REMOTE_ASYNC) || !h->order)
        return;
    pthread_mutex_lock(&s->mu);
    if (s->made < h->order)
        s->made = h->order;
    pthread_cond_broadcast(&s->turn);
    pthread_mutex_unlock(&s->mu);
}

static void *serve_lane(void *arg);

/* A LANE on the first connection: the socket that follows is a guest
 * thread's own, served by a thread of the executor's from now on (an
 * executor thread per guest thread: what the driver keeps per thread, the
 * current context among it, is each guest thread's).  0; -1 when the
 * guest is gone; VGPU_EXEC_CLOSE when it breaks the protocol. */
static int give_lane(struct vgpu_exec *x, const struct vgpu_remote_hdr *h)
{
    struct vgpu_remote_hdr fdh;
    int fd = -1;
    if (h->len != 0 || x->wire.fd < 0 || vgpu_wire_read_hdr_fd(x->wire.fd, &fdh, &fd) != 0 ||
        fdh.type != VGPU_REMOTE_LANE || fdh.len != 0 || fd < 0) {
        vgpu_error("executor: a LANE whose socket did not follow: closing");
        if (fd >= 0)
            close(fd);
        return VGPU_EXEC_CLOSE;
    }
    struct vgpu_exec *lane = malloc(sizeof(*lane));
    pthread_t t;
    pthread_attr_t a;
    int code = 0;
    if (!lane || pthread_attr_init(&a) != 0) {
        code = x->lib->not_supported;
    } else {
        *lane = (struct vgpu_exec){ .wire = { .fd = fd }, .s = x->s, .lib = x->lib, .driver = x->driver, .fn = x->fn,
                                    .window = x->window, .window_size = x->window_size, .bulk = x->bulk,
                                    .passed_fd = -1, .fd_back = -1 };
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &a, serve_lane, lane) != 0)
            code = x->lib->not_supported;
        pthread_attr_destroy(&a);
    }
    if (code) {
        vgpu_warn("executor: no thread for a lane of the guest's: its thread's calls share the first connection");
        free(lane);
        close(fd);
    }
    return vgpu_wire_send(&x->wire, VGPU_REMOTE_REPLY, (uint32_t)code, 0, NULL, 0);
}

/* Serves x's connection until the guest closes it (0), breaks the protocol
 * or is gone mid-message (1).  LANE is the first connection's alone. */
static int serve_loop(struct vgpu_exec *x, bool first)
{
    struct vgpu_ring ring = { 0 };
    void *buf = NULL;
    size_t cap = 0;
    int status = 1;
    for (;;) {
        struct vgpu_remote_hdr h;
        if (vgpu_wire_read_hdr(&x->wire, &h) != 0) {
            if (errno == 0)
                status = 0; /* the guest went: its process ends, and the driver frees what it held */
            else
                vgpu_error("executor: a broken message from the guest (%s): closing", strerror(errno));
            break;
        }
        if (h.len >= cap) { /* a byte to spare: a string a request ends with is NUL-ended in place */
            void *grown = realloc(buf, h.len + 1);
            if (!grown) {
                vgpu_error("executor: out of memory for a message of %llu bytes", (unsigned long long)h.len);
                break;
            }
            buf = grown;
            cap = h.len + 1;
        }
        if (h.len && vgpu_wire_read(&x->wire, buf, h.len) != 0)
            break;
        if (!await_turn(x->s, &h))
            break; /* another lane was lost */
        int sent = h.type == VGPU_REMOTE_RING            ? give_ring(x, &ring, &h, buf)
                   : h.type == VGPU_REMOTE_SHARE         ? vgpu_exec_share(x, buf, h.len)
                   : h.type == VGPU_REMOTE_UNSHARE       ? vgpu_exec_unshare(x, buf, h.len)
                   : h.type == VGPU_REMOTE_LANE && first ? give_lane(x, &h)
                                                         : vgpu_exec_one(x, &h, buf);
        made(x->s, &h);
        if (sent == VGPU_EXEC_CLOSE)
            break;
        if (sent != 0) {
            status = errno == EPIPE || errno == ECONNRESET ? 0 : 1;
            break;
        }
    }
    free(buf);
    if (x->wire.ring == &ring) /* a ring it gave (a channel's is the BAR's) */
        vgpu_ring_detach(&ring);
    return status;
}

static void *serve_lane(void *arg)
{
    struct vgpu_exec *lane = arg;
    if (serve_loop(lane, false) != 0)
        lose(lane->s);
    close(lane->wire.fd);
    free(lane);
    return NULL;
}

void vgpu_exec_session_init(struct vgpu_exec_session *s)
{
    *s = (struct vgpu_exec_session){ .first_fd = -1 };
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->turn, NULL);
}

int vgpu_exec_serve_wire(const struct vgpu_wire *w, const struct vgpu_exec_bulk *bulk)
{
    /* The guest process's, for the executor's life (its lanes' threads end with it). */
    struct vgpu_exec_session *s = malloc(sizeof(*s));
    if (!s) {
        vgpu_error("executor: out of memory for a guest");
        return 1;
    }
    vgpu_exec_session_init(s);
    s->first_fd = w->fd;
    struct vgpu_exec x = { .wire = *w, .s = s, .bulk = { .fd = -1 }, .passed_fd = -1, .fd_back = -1 };
    if (bulk)
        x.bulk = *bulk;
    if (hello(&x) != 0)
        return 1;
    return serve_loop(&x, true);
}
