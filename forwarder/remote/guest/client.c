/* The guest's connection to its executor (client.h, docs/design/remote.md). */
#define _GNU_SOURCE
#include "forwarder/remote/guest/client.h"

#include "common/clock.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/accounting.h"
#include "forwarder/remote/guest/channel.h"
#include "forwarder/remote/transport/ring.h"
#include "forwarder/remote/transport/shm.h"
#include "forwarder/remote/transport/wire.h"
#include "common/contract/protocol/mediator_client.h"
#include "common/contract/protocol/protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The connection, owned by this file: one call at a time under lock.
 * connection says whether it is made; conn.fd is its socket (-1 over a channel,
 * which has none), conn.ring &ring once the executor gave one. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static enum { LINK_NONE, LINK_UP, LINK_BROKEN } connection; /* not made yet; made; failed or broke: every call fails */
static struct vgpu_wire conn = { .fd = -1 };
static struct vgpu_ring ring;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
/* The executor's window for shared page-locked memory, reserved here too
 * (at the same addresses), or 0 and 0: under lock, set at the hello.
 * Over a channel, the channel's bulk is mapped there (window_backed). */
static uint64_t window, window_size;
static bool window_backed;
/* Whether the executor keeps a cache of module images (set at the hello). */
static bool image_cache;

/* Lanes (docs/design/remote.md, "Each guest thread its own"): over a
 * socket, every thread of the process makes its CUDA calls on a
 * connection of its own, a lane, which an executor thread of its own
 * serves; the first connection then carries only the hello and the LANE
 * requests.  lanes: whether this connection gives them (under lock, set at
 * the connection); epoch: bumped whenever the connection goes, so that
 * older lanes are void (changed under lock, read atomically anywhere);
 * async_sent: the process's asynchronous calls numbered so far, the order
 * the executor makes them in across lanes (wire.h; atomic). */
static bool lanes;
static uint64_t epoch;
static uint64_t async_sent;
struct lane {
    struct lane *next, **prev; /* on all_lanes, under lock */
    struct vgpu_wire w;
    struct vgpu_ring ring;
    uint64_t epoch;
    bool none; /* the executor gave no lane: the first connection carries this thread's calls */
};
/* The calling thread's lane, its own; freed at its exit (lane_key's
 * destructor), or, in a child of fork, at the fork with every other. */
static __thread struct lane *my_lane;
/* Every thread's lane, under lock: a child of fork closes them all. */
static struct lane *all_lanes;
static pthread_key_t lane_key;
static bool lane_key_made; /* without it no lane could be let go of at its thread's end: none is made */
static pthread_once_t lane_once = PTHREAD_ONCE_INIT;

/* Under lock, over a channel about to be let go: what of its bulk this
 * process mapped becomes private memory with the same bytes (its page-
 * locked blocks stay readable and writable here), so that the channel's
 * next owner never shares them. */
static void privatize_window(void)
{
    if (!window_backed)
        return;
    void *copy = mmap(NULL, window_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy != MAP_FAILED) {
        memcpy(copy, (void *)(uintptr_t)window, window_size);
        if (mremap(copy, window_size, window_size, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)(uintptr_t)window) ==
            MAP_FAILED)
            munmap(copy, window_size);
        else
            copy = NULL;
    }
    if (copy == MAP_FAILED || copy) /* no copy: the bulk unmapped, its addresses inaccessible */
        vgpu_shm_reserve((void *)(uintptr_t)window, window_size);
    window_backed = false;
}

/* Closes the connection (and unmaps its ring, or lets its channel go);
 * connection becomes after. */
static void disconnect(int after)
{
    if (conn.ring)
        vgpu_ring_detach(conn.ring);
    if (conn.ring && conn.fd < 0) {
        privatize_window();
        vgpu_channel_release();
    }
    conn.ring = NULL;
    if (conn.fd >= 0)
        close(conn.fd);
    conn.fd = -1;
    connection = after;
    __atomic_add_fetch(&epoch, 1, __ATOMIC_RELEASE);
}

static void lane_free_locked(struct lane *l);

/* A child of fork does not share its parent's executor: it makes its own
 * connection at its first call (the parent's stays the parent's). */
static void child_after_fork(void)
{
    pthread_mutex_init(&lock, NULL);
    /* The parent's channel (if any) stays the parent's, and so does its
     * heartbeat thread; its ring is not this process's to let go. */
    vgpu_channel_forget();
    vgpu_remote_account_forget();
    if (conn.fd < 0)
        conn.ring = NULL;
    disconnect(LINK_NONE);
    /* What is left of the parent's window is host_memory.c's (its blocks'
     * private copies); the child's executor offers a window of its own. */
    window = window_size = 0;
    window_backed = false;
    image_cache = false;
    /* The parent's lanes are its executor's: their sockets and rings closed here (the parent keeps its own). */
    lanes = false;
    __atomic_store_n(&async_sent, 0, __ATOMIC_RELAXED);
    while (all_lanes)
        lane_free_locked(all_lanes);
    my_lane = NULL;
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

/* The library's name, for messages. */
static const char *what_library(void)
{
    return vgpu_remote_library.id == 1 ? "NVML" : "CUDA";
}

/* The mediator's socket, asked for an executor of this process's vGPU
 * (VGPU_NAME, or the one the mediator picks): the connection, which the
 * executor serves once the mediator says REMOTE_READY; -1 when refused. */
static int ask_mediator(const char *path)
{
    int s = -1, e = vgpu_mediator_connect(path, &s);
    if (e != 0) {
        vgpu_error("remote GPU: cannot connect to vgpu-mediatord at %s (%s): every %s call fails as if no GPU "
                   "were present. Is the mediator running, and is its socket mounted here?",
                   path, strerror(e), what_library());
        return -1;
    }
    struct vgpu_msg_hello h = { .flags = 0, .slot = UINT32_MAX };
    const char *name = getenv("VGPU_NAME");
    vgpu_proto_copy_string(h.vgpu, sizeof(h.vgpu), name ? name : "");
    uint8_t *buf = NULL;
    size_t cap = 0;
    struct vgpu_msg m;
    char why[256];
    int nfds = 0;
    if (vgpu_proto_send(s, VGPU_MSG_REMOTE, &h, sizeof(h), NULL, 0) != 0 ||
        vgpu_proto_recv(s, &buf, &cap, VGPU_PROTO_MAX_REPLY, 30000, &m, NULL, &nfds, why, sizeof(why)) != 0) {
        vgpu_error("remote GPU: vgpu-mediatord at %s did not answer: every %s call fails", path, what_library());
        free(buf);
        close(s);
        return -1;
    }
    free(buf);
    if (m.type == VGPU_MSG_REMOTE_READY) {
        vgpu_info("remote GPU: vgpu-mediatord at %s gave this process an executor of vGPU %s", path, m.u.admit.vgpu);
        return s;
    }
    if (m.type == VGPU_MSG_REFUSE)
        vgpu_error("remote GPU: vgpu-mediatord refused this process a remote GPU: %s", m.u.refuse.reason);
    else
        vgpu_error("remote GPU: vgpu-mediatord at %s answered REMOTE with message type %u: is it older than this "
                   "vgpu?",
                   path, (unsigned)m.type);
    close(s);
    return -1;
}

/* The executor's own socket (VGPU_REMOTE=PATH); -1 when it cannot be reached. */
static int connect_executor(const char *path)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(a.sun_path)) {
        vgpu_error("remote GPU: VGPU_REMOTE=%s is longer than a socket path may be", path);
        return -1;
    }
    strcpy(a.sun_path, path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
        vgpu_error("remote GPU: cannot connect to the executor at %s (%s): every %s call fails as if no GPU "
                   "were present. Is vgpu-executor serving that socket, and may this user open it?",
                   path, strerror(errno), what_library());
        if (s >= 0)
            close(s);
        return -1;
    }
    return s;
}

/* Under lock: the window the executor offers, reserved at the same
 * addresses here if they are free (a block shared there has its device
 * view at its own address), or none. */
static void take_window(uint64_t base, uint64_t size)
{
    if (window_size || !size || base + size < base)
        return;
    if (vgpu_shm_reserve_at((void *)(uintptr_t)base, size)) {
        window = base;
        window_size = size;
        return;
    }
    vgpu_info("remote GPU: the executor's window for page-locked memory (%#llx, %llu GiB) is taken here: a block's "
              "device view is another address",
              (unsigned long long)base, (unsigned long long)(size >> 30));
}

/* Under lock, over a channel: its bulk mapped over the window, where
 * page-locked blocks then lie (the executor maps it there too); without
 * it, no window. */
static void back_window(void)
{
    uint64_t offset, size;
    int fd = vgpu_channel_bulk_of(&offset, &size);
    if (window_size && fd >= 0 && size == window_size &&
        mmap((void *)(uintptr_t)window, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)offset) !=
            MAP_FAILED) {
        window_backed = true;
        vgpu_info("remote GPU: page-locked memory comes from the channel's %llu KiB shared with the executor",
                  (unsigned long long)(size >> 10));
        return;
    }
    if (window_size)
        munmap((void *)(uintptr_t)window, window_size);
    window = window_size = 0;
}

/* On a connection that said hello (or a lane): asks the executor for a
 * shared-memory ring (unless VGPU_REMOTE_TRANSPORT=socket) and maps it at
 * r, which then carries w's messages.  Without one, the socket carries
 * them.  0; -1 when the connection broke (said). */
static int ring_for(struct vgpu_wire *w, struct vgpu_ring *r, const char *path)
{
    uint64_t want;
    struct vgpu_ring_spin spin;
    char why[256];
    if (vgpu_ring_settings(&want, &spin, why, sizeof(why)) != 0)
        vgpu_warn("remote GPU: %s", why);
    if (!want)
        return 0;
    struct vgpu_remote_ring_request rq = { .bytes = want };
    struct iovec q = { &rq, sizeof(rq) };
    struct vgpu_remote_hdr h;
    uint64_t length = 0;
    int memfd = -1, status = 0;
    w->order = 0;
    if (vgpu_wire_send(w, VGPU_REMOTE_RING, 0, 0, &q, 1) != 0 || vgpu_wire_read_hdr_fd(w->fd, &h, &memfd) != 0 ||
        h.type != VGPU_REMOTE_REPLY || h.len != (h.call == 0 ? sizeof(length) : 0) ||
        (h.len && vgpu_wire_read(w, &length, sizeof(length)) != 0)) {
        vgpu_error("remote GPU: the executor at %s broke off when asked for a shared-memory ring: every %s call fails",
                   path, what_library());
        status = -1;
    } else if (h.call == 0 && memfd < 0) { /* the executor went on to the ring: the socket carries no calls now */
        vgpu_error("remote GPU: the executor at %s gave a shared-memory ring that did not arrive (this process's "
                   "descriptors may be used up): every %s call fails",
                   path, what_library());
        status = -1;
    } else if (h.call != 0) {
        vgpu_warn("remote GPU: the executor at %s gave no shared-memory ring (code %u): calls go through its socket, "
                  "slower (its log says why)",
                  path, (unsigned)h.call);
    } else if (vgpu_ring_attach(r, memfd, length, w->fd) != 0) {
        vgpu_error("remote GPU: the shared-memory ring the executor at %s gave cannot be used (%s): every %s call "
                   "fails",
                   path, strerror(errno), what_library());
        status = -1;
    } else {
        r->spin = spin;
        w->ring = r;
        static bool said; /* the first ring's line is enough: every lane's is alike */
        if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
            vgpu_info("remote GPU: calls go through a shared-memory ring of 2 x %llu MiB",
                      (unsigned long long)(r->tx.size >> 20));
    }
    if (memfd >= 0)
        close(memfd); /* mapped, or not to be */
    return status;
}

/* Whether this process's threads each get a lane: CUDA's, over a socket,
 * unless VGPU_REMOTE_LANES=0 (every thread's calls on one connection, one
 * at a time, as over a VM's channel). */
static bool lanes_wanted(void)
{
    const char *v = getenv("VGPU_REMOTE_LANES");
    return vgpu_remote_library.id == 0 && conn.fd >= 0 && !(v && strcmp(v, "0") == 0);
}

/* The guest's driver settings for a CUDA HELLO (wire.h), NAME=VALUE each
 * NUL-ended, in env (VGPU_REMOTE_ENV_BYTES): their length.  One that would
 * not fit is left out, said. */
static size_t driver_settings(char *env)
{
    static const char *const names[] = VGPU_REMOTE_ENV_NAMES;
    size_t n = 0;
    for (size_t i = 0; vgpu_remote_library.id == 0 && i < sizeof(names) / sizeof(*names); i++) {
        const char *v = getenv(names[i]);
        if (!v)
            continue;
        int len = snprintf(env + n, VGPU_REMOTE_ENV_BYTES - n, "%s=%s", names[i], v);
        if (len < 0 || (size_t)len >= VGPU_REMOTE_ENV_BYTES - n) {
            vgpu_warn("remote GPU: %s is too long to give the executor: left out", names[i]);
            continue;
        }
        n += (size_t)len + 1;
    }
    return n;
}

/* Under lock: a channel of the vGPU's PCI BAR, or of a file standing in
 * for it (channels/guest.h): the ring, with no socket; whether it is. */
static bool connect_channel(const char *where)
{
    char why[512];
    if (vgpu_channel_connect(where, &ring, why, sizeof(why)) != 0) {
        vgpu_error("remote GPU: %s: every %s call fails as if no GPU were present", why, what_library());
        return false;
    }
    conn.ring = &ring;
    return true;
}

/* Under lock: connects (through the mediator, to the executor's socket, or
 * over a channel), says hello and asks for the ring; connection is LINK_UP or
 * LINK_BROKEN. */
static void connect_locked(void)
{
    const char *path = vgpu_remote_where();
    bool mediator = strcmp(path, "mediator") == 0, channel = vgpu_channel_wanted(path);
    if (mediator) {
        const char *m = getenv("VGPU_MEDIATOR_SOCKET");
        path = m && *m && strcmp(m, "none") != 0 ? m : VGPU_MEDIATOR_DEFAULT_SOCKET;
    }
    int s = channel ? -1 : mediator ? ask_mediator(path) : connect_executor(path);
    connection = (channel ? connect_channel(path) : s >= 0) ? LINK_UP : LINK_BROKEN;
    conn.fd = s;
    if (connection != LINK_UP)
        return;
    /* The ABI's hash, the pid, the library, and the command's name (for
     * the host's listings: the executor takes it as its own, labelled). */
    struct vgpu_remote_hello hi = {
        .hash = vgpu_remote_library.hash, .pid = (uint64_t)getpid(), .library = vgpu_remote_library.id
    };
    prctl(PR_GET_NAME, hi.comm);
    char env[VGPU_REMOTE_ENV_BYTES];
    struct iovec v[2] = { { &hi, sizeof(hi) }, { env, driver_settings(env) } };
    struct vgpu_remote_hdr h;
    struct vgpu_remote_welcome offered = { 0 };
    if (vgpu_wire_send(&conn, VGPU_REMOTE_HELLO, 0, 0, v, 2) != 0 || vgpu_wire_read_hdr(&conn, &h) != 0 ||
        h.type != VGPU_REMOTE_REPLY || (h.len != 0 && h.len != sizeof(offered)) ||
        (h.len && vgpu_wire_read(&conn, &offered, sizeof(offered)) != 0)) {
        vgpu_error("remote GPU: the executor at %s did not answer this guest's hello: every %s call fails", path,
                   what_library());
        disconnect(LINK_BROKEN);
        return;
    }
    if (h.call != 0) {
        vgpu_error("remote GPU: the executor at %s refused this guest's %s (code %u; this guest's ABI is "
                   "%016llx): its log says why (another vgpu build, no %s on the host)",
                   path, what_library(), (unsigned)h.call, (unsigned long long)vgpu_remote_library.hash,
                   what_library());
        disconnect(LINK_BROKEN);
        return;
    }
    vgpu_info("remote GPU: connected to the executor at %s", path);
    vgpu_remote_account_open(vgpu_remote_where(), vgpu_remote_library.id, vgpu_remote_library.dispatch->names,
                             vgpu_remote_library.dispatch->count);
    take_window(offered.window, offered.window_size);
    image_cache = (offered.flags & VGPU_REMOTE_HELLO_IMAGE_CACHE) != 0;
    if (channel)
        back_window();
    else if (lanes_wanted())
        lanes = true; /* the first connection carries only LANE requests: no ring of its own */
    else if (ring_for(&conn, &ring, path) != 0)
        disconnect(LINK_BROKEN);
    vgpu_info("remote GPU: %s", lanes ? "each thread's calls go on a lane of its own, served by an executor thread "
                                        "of its own"
                                      : "every thread's calls go on this one connection, one at a time");
}

/* Under lock: the connection broke mid-call; every later call fails. */
static int broken(const char *what)
{
    vgpu_error("remote GPU: the executor at %s went away (%s: %s): this and every later %s call fails",
               vgpu_remote_where(), what, errno ? strerror(errno) : "end of file", what_library());
    disconnect(LINK_BROKEN);
    return vgpu_remote_library.unavailable;
}

/* Under lock: connected, or false. */
static bool connected(void)
{
    pthread_once(&atfork_once, register_atfork);
    if (connection == LINK_NONE)
        connect_locked();
    return connection == LINK_UP;
}

/* The order a message on w carries (wire.h): an asynchronous call's number,
 * anything else's count of those before it.  On the first connection
 * under lock, so that its messages go in the order they are numbered. */
static void stamp(struct vgpu_wire *w, bool async)
{
    w->order = async ? __atomic_add_fetch(&async_sent, 1, __ATOMIC_SEQ_CST)
                     : __atomic_load_n(&async_sent, __ATOMIC_SEQ_CST);
}

static size_t iov_bytes(const struct iovec *v, int n)
{
    size_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += v[i].iov_len;
    return sum;
}

/* A message of type sent on w, with a descriptor passed beside it (-1:
 * none): its reply read into the iovecs; the code, or -1 with *failed
 * saying what broke. */
static int exchange(struct vgpu_wire *w, uint16_t type, unsigned slot, uint32_t flags, const struct iovec *req,
                    int nreq, const struct iovec *reply, int nreply, size_t *got, int passed, const char **failed)
{
    struct vgpu_remote_hdr h;
    uint64_t began = vgpu_now_ns();
    if (type == VGPU_REMOTE_LANE)
        w->order = 0; /* made at once: a lane waits for no call */
    else
        stamp(w, false);
    if (vgpu_wire_send(w, type, slot, flags, req, nreq) != 0 ||
        (passed >= 0 && vgpu_wire_send_fd(w->fd, type, 0, NULL, 0, passed) != 0)) {
        *failed = "sending";
        return -1;
    }
    if (vgpu_wire_read_hdr(w, &h) != 0 || h.type != VGPU_REMOTE_REPLY) {
        *failed = "reading the reply";
        return -1;
    }
    size_t left = h.len;
    if (got)
        *got = left;
    for (int i = 0; i < nreply && left; i++) {
        size_t n = reply[i].iov_len < left ? reply[i].iov_len : left;
        if (vgpu_wire_read(w, reply[i].iov_base, n) != 0) {
            *failed = "reading the reply";
            return -1;
        }
        left -= n;
    }
    if (left) {
        errno = EPROTO;
        *failed = "a reply longer than the call's";
        return -1;
    }
    if (type == VGPU_REMOTE_CALL)
        vgpu_remote_account_crossed(slot, vgpu_now_ns() - began, iov_bytes(req, nreq) + h.len);
    return (int)h.call;
}

/* The calling thread's descriptors of its calls flagged VGPU_REMOTE_FD_IN
 * and VGPU_REMOTE_FD_OUT (client.h): its own, so no lock. */
static __thread int fd_to_pass = -1, fd_taken = -1;

void vgpu_remote_fd_to_pass(int fd)
{
    fd_to_pass = fd;
}

int vgpu_remote_fd_taken(void)
{
    int fd = fd_taken;
    fd_taken = -1;
    return fd;
}

/* After a call flagged VGPU_REMOTE_FD_OUT succeeded on w: the descriptor
 * that follows on its socket.  0, or -1 with *failed. */
static int take_fd(struct vgpu_wire *w, const char **failed)
{
    struct vgpu_remote_hdr h;
    int fd = -1;
    if (vgpu_wire_read_hdr_fd(w->fd, &h, &fd) != 0 || h.type != VGPU_REMOTE_REPLY || h.len != 0 || fd < 0) {
        if (fd >= 0)
            close(fd);
        *failed = "reading the descriptor of a reply";
        return -1;
    }
    fd_taken = fd;
    return 0;
}

/* ---- Lanes ---- */

/* Under lock: l off all_lanes, closed and freed. */
static void lane_free_locked(struct lane *l)
{
    *l->prev = l->next;
    if (l->next)
        l->next->prev = l->prev;
    if (!l->none) {
        if (l->w.ring)
            vgpu_ring_detach(&l->ring);
        close(l->w.fd);
    }
    free(l);
}

/* A thread ends: its lane closes, and the executor's thread of it with it.
 * A destructor that runs after this one and calls CUDA makes a new lane,
 * freed at the destructors' next pass. */
static void lane_gone(void *p)
{
    if (p == my_lane)
        my_lane = NULL;
    pthread_mutex_lock(&lock);
    lane_free_locked(p);
    pthread_mutex_unlock(&lock);
}

static void make_lane_key(void)
{
    lane_key_made = pthread_key_create(&lane_key, lane_gone) == 0;
}

/* Under lock, connected with lanes: a lane asked for (LANE, one end of a
 * socket pair beside it) into l.  0; 1 when the executor gave none (the
 * first connection carries the thread's calls); -1 when the connection
 * broke (said). */
static int open_lane(struct lane *l)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        vgpu_warn("remote GPU: no socket for a thread's lane (%s): its calls share the first connection",
                  strerror(errno));
        return 1;
    }
    const char *failed = NULL;
    int r = exchange(&conn, VGPU_REMOTE_LANE, 0, 0, NULL, 0, NULL, 0, NULL, sv[1], &failed);
    close(sv[1]);
    if (r != 0) {
        close(sv[0]);
        if (failed) {
            broken(failed);
            return -1;
        }
        vgpu_warn("remote GPU: the executor gave this thread no lane (code %d): its calls share the first "
                  "connection",
                  r);
        return 1;
    }
    l->w = (struct vgpu_wire){ .fd = sv[0] };
    return 0;
}

/* The wire the calling thread's next message goes on: its lane (no lock
 * held), or the first connection (lock held: *locked).  NULL with *code
 * (the lock not held) when there is none: no executor, or it broke. */
static struct vgpu_wire *thread_wire(bool *locked, int *code)
{
    pthread_once(&atfork_once, register_atfork);
    struct lane *l = my_lane;
    uint64_t now = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
    *locked = false;
    if (l && l->epoch == now && !l->none)
        return &l->w;
    pthread_mutex_lock(&lock);
    if (!connected()) {
        pthread_mutex_unlock(&lock);
        *code = vgpu_remote_library.unavailable;
        return NULL;
    }
    if (l && l->epoch == epoch && l->none) {
        *locked = true;
        return &conn;
    }
    if (l) { /* of a connection gone */
        pthread_setspecific(lane_key, NULL);
        lane_free_locked(l);
        my_lane = NULL;
    }
    pthread_once(&lane_once, make_lane_key);
    if (!lanes || !lane_key_made) {
        *locked = true;
        return &conn;
    }
    l = calloc(1, sizeof(*l));
    int made = l ? open_lane(l) : 1;
    if (made < 0) {
        pthread_mutex_unlock(&lock);
        free(l);
        *code = vgpu_remote_library.unavailable;
        return NULL;
    }
    if (!l) {
        *locked = true;
        return &conn;
    }
    l->none = made == 1;
    l->epoch = epoch;
    l->next = all_lanes;
    l->prev = &all_lanes;
    if (all_lanes)
        all_lanes->prev = &l->next;
    all_lanes = l;
    my_lane = l;
    pthread_setspecific(lane_key, l);
    if (l->none) {
        *locked = true;
        return &conn;
    }
    pthread_mutex_unlock(&lock);
    if (ring_for(&l->w, &l->ring, vgpu_remote_where()) != 0) {
        pthread_mutex_lock(&lock);
        if (l->epoch == epoch)
            disconnect(LINK_BROKEN);
        pthread_mutex_unlock(&lock);
        *code = vgpu_remote_library.unavailable;
        return NULL;
    }
    return &l->w;
}

/* What a message on w that broke (failed says how) leaves: the connection
 * and every lane gone, every later call failing; the lock let go of if
 * held.  The code to return. */
static int link_broke(bool locked, const char *failed)
{
    if (!locked)
        pthread_mutex_lock(&lock);
    int r = connection == LINK_UP ? broken(failed) : vgpu_remote_library.unavailable;
    pthread_mutex_unlock(&lock);
    return r;
}

/* After a message on the thread's wire: code r, or what broke (failed);
 * the lock let go of if held. */
static int finish(bool locked, const char *failed, int r)
{
    if (failed)
        return link_broke(locked, failed);
    if (locked)
        pthread_mutex_unlock(&lock);
    return r;
}

int vgpu_remote_call_flagged(unsigned slot, uint32_t flags, const struct iovec *req, int nreq,
                             const struct iovec *reply, int nreply, size_t *got)
{
    bool fds = flags & (VGPU_REMOTE_FD_IN | VGPU_REMOTE_FD_OUT);
    int passed = flags & VGPU_REMOTE_FD_IN ? fd_to_pass : -1;
    fd_to_pass = -1;
    if (fd_taken >= 0) /* taken by a call whose reply then failed to parse: nobody's */
        close(fd_taken);
    fd_taken = -1;
    /* A descriptor that is none is the caller's invalid argument, not a broken connection. */
    if ((flags & VGPU_REMOTE_FD_IN) && (passed < 0 || fcntl(passed, F_GETFD) < 0))
        return vgpu_remote_library.invalid;
    bool locked;
    int r;
    struct vgpu_wire *w = thread_wire(&locked, &r);
    if (!w)
        return r;
    const char *failed = NULL;
    if (fds && w->fd < 0)
        r = vgpu_remote_library.not_supported; /* a VM's channel carries no descriptor */
    else
        r = exchange(w, VGPU_REMOTE_CALL, slot, flags, req, nreq, reply, nreply, got, passed, &failed);
    if (r == 0 && (flags & VGPU_REMOTE_FD_OUT))
        r = take_fd(w, &failed);
    return finish(locked, failed, r);
}

int vgpu_remote_call(unsigned slot, const struct iovec *req, int nreq, const struct iovec *reply, int nreply,
                     size_t *got)
{
    return vgpu_remote_call_flagged(slot, 0, req, nreq, reply, nreply, got);
}

int vgpu_remote_send_flagged(unsigned slot, uint32_t flags, const struct iovec *req, int nreq)
{
    bool locked;
    int r;
    struct vgpu_wire *w = thread_wire(&locked, &r);
    if (!w)
        return r;
    stamp(w, true);
    uint64_t full = w->ring ? w->ring->full_ns : 0;
    if (vgpu_wire_send(w, VGPU_REMOTE_CALL, slot, VGPU_REMOTE_ASYNC | flags, req, nreq) != 0)
        return link_broke(locked, "sending");
    vgpu_remote_account_sent(slot, iov_bytes(req, nreq), w->ring ? w->ring->full_ns - full : 0);
    if (locked)
        pthread_mutex_unlock(&lock);
    return 0;
}

int vgpu_remote_send(unsigned slot, const struct iovec *req, int nreq)
{
    return vgpu_remote_send_flagged(slot, 0, req, nreq);
}

bool vgpu_remote_image_cache(void)
{
    pthread_mutex_lock(&lock);
    bool have = connected() && image_cache;
    pthread_mutex_unlock(&lock);
    return have;
}

bool vgpu_remote_window(uint64_t *base, uint64_t *size, bool *backed)
{
    pthread_mutex_lock(&lock);
    bool have = connected() && window_size;
    *base = window;
    *size = window_size;
    *backed = window_backed;
    pthread_mutex_unlock(&lock);
    return have;
}

/* SHARE and UNSHARE, on the calling thread's lane (a memfd beside a SHARE). */
static int exchange_block(uint16_t type, const struct iovec *q, const struct iovec *a, size_t *got, int memfd)
{
    bool locked;
    int r;
    struct vgpu_wire *w = thread_wire(&locked, &r);
    if (!w)
        return r;
    const char *failed = NULL;
    /* Over a channel, a block of the bulk, with no memfd (none crosses). */
    if (type == VGPU_REMOTE_SHARE && (w->fd < 0) != (memfd < 0))
        r = vgpu_remote_library.not_supported;
    else
        r = exchange(w, type, 0, 0, q, 1, a, a ? 1 : 0, got, memfd, &failed);
    return finish(locked, failed, r);
}

int vgpu_remote_share(const void *p, size_t n, int memfd, uint64_t *view)
{
    struct vgpu_remote_share rq = { .guest = (uint64_t)(uintptr_t)p, .length = n };
    struct iovec q = { &rq, sizeof(rq) }, a = { view, sizeof(*view) };
    size_t got = 0;
    *view = 0;
    int r = exchange_block(VGPU_REMOTE_SHARE, &q, &a, &got, memfd);
    if (r == 0 && got != sizeof(*view))
        *view = 0;
    return r;
}

int vgpu_remote_unshare(const void *p)
{
    struct vgpu_remote_unshare rq = { .guest = (uint64_t)(uintptr_t)p };
    struct iovec q = { &rq, sizeof(rq) };
    return exchange_block(VGPU_REMOTE_UNSHARE, &q, NULL, NULL, -1);
}

int vgpu_remote_send_words(unsigned slot, const uint64_t *in, unsigned nin)
{
    struct iovec q = { (void *)in, nin * sizeof(uint64_t) };
    return vgpu_remote_send(slot, &q, 1);
}

int vgpu_remote_call_words(unsigned slot, const uint64_t *in, unsigned nin, uint64_t *out, unsigned nout)
{
    struct iovec q = { (void *)in, nin * sizeof(uint64_t) }, a = { out, nout * sizeof(uint64_t) };
    size_t got = 0;
    int r = vgpu_remote_call(slot, &q, 1, &a, 1, &got);
    if (r == 0 && got != nout * sizeof(uint64_t))
        return vgpu_remote_library.unknown;
    return r;
}

/* Which slots were refused already, to log each once.  Owned by this file. */
static unsigned char refused[2048];

int vgpu_remote_refuse_why(unsigned slot, const char *why)
{
    if (slot < vgpu_remote_library.count && slot < sizeof(refused) &&
        !__atomic_exchange_n(&refused[slot], 1, __ATOMIC_RELAXED))
        vgpu_warn("remote GPU: %s is not carried: %s; refused as not supported (docs/reference/remote-calls.md)",
                  vgpu_remote_library.dispatch->names[slot], why);
    return vgpu_remote_library.not_supported;
}

int vgpu_remote_refuse(unsigned slot)
{
    return vgpu_remote_refuse_why(slot, "its arguments ask more than vgpu carries");
}
