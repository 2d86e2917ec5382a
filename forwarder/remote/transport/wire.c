/* The remote driver's framing, for guest and executor alike (wire.h). */
#define _GNU_SOURCE
#include "forwarder/remote/transport/wire.h"

#include "common/clock.h"

#include "forwarder/remote/transport/ring.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The header and the iovecs, in v (9 entries). */
static int frame(struct vgpu_remote_hdr *h, uint16_t type, uint32_t call, uint32_t flags, uint64_t order,
                 const struct iovec *iov, int n, struct iovec *v)
{
    if (n > 8 || n < 0) {
        errno = EINVAL;
        return -1;
    }
    *h = (struct vgpu_remote_hdr){ VGPU_REMOTE_MAGIC, VGPU_REMOTE_VERSION, type, call, flags, 0, order };
    v[0].iov_base = h;
    v[0].iov_len = sizeof(*h);
    for (int i = 0; i < n; i++) {
        v[i + 1] = iov[i];
        h->len += iov[i].iov_len;
    }
    return 0;
}

/* All of m's iovecs on the socket (its control message, if any, with the first bytes). */
static int send_all(int fd, struct msghdr *m)
{
    while (m->msg_iovlen) {
        ssize_t w = sendmsg(fd, m, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        m->msg_control = NULL;
        m->msg_controllen = 0;
        /* Past what was sent. */
        while (m->msg_iovlen && (size_t)w >= m->msg_iov->iov_len) {
            w -= (ssize_t)m->msg_iov->iov_len;
            m->msg_iov++;
            m->msg_iovlen--;
        }
        if (m->msg_iovlen) {
            m->msg_iov->iov_base = (char *)m->msg_iov->iov_base + w;
            m->msg_iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

int vgpu_wire_send(struct vgpu_wire *w, uint16_t type, uint32_t call, uint32_t flags, const struct iovec *iov, int n)
{
    struct vgpu_remote_hdr h;
    struct iovec v[9];
    if (frame(&h, type, call, flags, w->order, iov, n, v) != 0)
        return -1;
    if (w->ring)
        return vgpu_ring_write(w->ring, v, n + 1);
    struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)n + 1 };
    return send_all(w->fd, &m);
}

int vgpu_wire_send_fd(int fd, uint16_t type, uint32_t call, const struct iovec *iov, int n, int passed)
{
    struct vgpu_remote_hdr h;
    struct iovec v[9];
    if (frame(&h, type, call, 0, 0, iov, n, v) != 0)
        return -1;
    union {
        struct cmsghdr c;
        char b[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof(control));
    struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)n + 1 };
    if (passed >= 0) {
        m.msg_control = control.b;
        m.msg_controllen = sizeof(control.b);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &passed, sizeof(int));
    }
    return send_all(fd, &m);
}

/* How long a read of the socket spins before it blocks (VGPU_REMOTE_SPIN_US,
 * as the ring's waits do, and following the waits before it as theirs):
 * a reply that comes within it costs no wake-up. */
static struct vgpu_ring_spin socket_spin(void)
{
    /* This file's: read once, the same from every thread (most is stored
     * before least, which says both are). */
    static uint64_t least = UINT64_MAX, most;
    struct vgpu_ring_spin s = { __atomic_load_n(&least, __ATOMIC_ACQUIRE), 0 };
    if (s.least_ns != UINT64_MAX) {
        s.most_ns = __atomic_load_n(&most, __ATOMIC_RELAXED);
        return s;
    }
    uint64_t ignored;
    char err[256];
    vgpu_ring_settings(&ignored, &s, err, sizeof(err)); /* a malformed value is the ring's to report */
    __atomic_store_n(&most, s.most_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&least, s.least_ns, __ATOMIC_RELEASE);
    return s;
}

/* Reads exactly len bytes from the socket; the first read takes the
 * descriptors that come with them into *passed (if passed).  A read that
 * finds nothing spins (reading without blocking) before it blocks: as
 * long as *next says (vgpu_ring_next_spin, which it then updates), or the
 * least spin where next is NULL. */
static int read_socket(int fd, void *p, size_t len, int *passed, uint64_t *next)
{
    struct vgpu_ring_spin waits = socket_spin();
    uint64_t spin = next && *next > waits.least_ns ? *next : waits.least_ns;
    char *c = p;
    while (len) {
        union {
            struct cmsghdr c;
            char b[CMSG_SPACE(4 * sizeof(int))];
        } control;
        memset(&control, 0, sizeof(control));
        struct iovec v = { c, len };
        struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
        if (passed) {
            m.msg_control = control.b;
            m.msg_controllen = sizeof(control.b);
        }
        ssize_t r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (r < 0 && errno == EAGAIN) {
            uint64_t start = vgpu_now_ns();
            while (r < 0 && errno == EAGAIN && vgpu_now_ns() - start < spin)
                r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
            if (r < 0 && errno == EAGAIN)
                r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
            if (next && r > 0)
                *next = vgpu_ring_next_spin(&waits, *next, vgpu_now_ns() - start);
        }
        if (r < 0 && errno == EINTR)
            continue;
        /* Only what a successful read received: a failed one leaves the header as it was. */
        for (struct cmsghdr *h = passed && r > 0 ? CMSG_FIRSTHDR(&m) : NULL; h; h = CMSG_NXTHDR(&m, h)) {
            if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS || h->cmsg_len < CMSG_LEN(0))
                continue;
            for (size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                int got;
                memcpy(&got, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
                if (*passed < 0)
                    *passed = got;
                else
                    close(got);
            }
        }
        passed = NULL;
        if (r <= 0) {
            if (r == 0)
                errno = 0;
            return -1;
        }
        c += r;
        len -= (size_t)r;
    }
    return 0;
}

int vgpu_wire_read(struct vgpu_wire *w, void *p, size_t len)
{
    return w->ring ? vgpu_ring_read(w->ring, p, len) : read_socket(w->fd, p, len, NULL, &w->spin_next_ns);
}

static int check_hdr(const struct vgpu_remote_hdr *h)
{
    if (h->magic != VGPU_REMOTE_MAGIC || h->version != VGPU_REMOTE_VERSION || h->len > VGPU_REMOTE_MAX_LEN ||
        (h->flags & ~(VGPU_REMOTE_ASYNC | VGPU_REMOTE_SHARED | VGPU_REMOTE_BY_HASH | VGPU_REMOTE_FD_IN |
                      VGPU_REMOTE_FD_OUT))) {
        errno = EPROTO;
        return -1;
    }
    return 0;
}

int vgpu_wire_read_hdr(struct vgpu_wire *w, struct vgpu_remote_hdr *h)
{
    return vgpu_wire_read(w, h, sizeof(*h)) != 0 ? -1 : check_hdr(h);
}

int vgpu_wire_read_hdr_fd(int fd, struct vgpu_remote_hdr *h, int *passed)
{
    *passed = -1;
    if (read_socket(fd, h, sizeof(*h), passed, NULL) == 0 && check_hdr(h) == 0)
        return 0;
    int e = errno;
    if (*passed >= 0)
        close(*passed);
    *passed = -1;
    errno = e;
    return -1;
}
