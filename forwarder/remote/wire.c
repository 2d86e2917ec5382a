/* The remote driver's framing, for guest and executor alike (wire.h). */
#include "forwarder/remote/wire.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

int vgpu_wire_send(int fd, uint16_t type, uint32_t call, uint32_t flags, const struct iovec *iov, int n)
{
    struct vgpu_remote_hdr h = { VGPU_REMOTE_MAGIC, VGPU_REMOTE_VERSION, type, call, flags, 0 };
    struct iovec v[9];
    if (n > 8) {
        errno = EINVAL;
        return -1;
    }
    v[0].iov_base = &h;
    v[0].iov_len = sizeof(h);
    for (int i = 0; i < n; i++) {
        v[i + 1] = iov[i];
        h.len += iov[i].iov_len;
    }
    struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)n + 1 };
    while (m.msg_iovlen) {
        ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        /* Past what was sent. */
        while (m.msg_iovlen && (size_t)w >= m.msg_iov->iov_len) {
            w -= (ssize_t)m.msg_iov->iov_len;
            m.msg_iov++;
            m.msg_iovlen--;
        }
        if (m.msg_iovlen) {
            m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + w;
            m.msg_iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

int vgpu_wire_read(int fd, void *p, size_t len)
{
    char *c = p;
    while (len) {
        ssize_t r = recv(fd, c, len, 0);
        if (r < 0 && errno == EINTR)
            continue;
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

int vgpu_wire_read_hdr(int fd, struct vgpu_remote_hdr *h)
{
    if (vgpu_wire_read(fd, h, sizeof(*h)) != 0)
        return -1;
    if (h->magic != VGPU_REMOTE_MAGIC || h->version != VGPU_REMOTE_VERSION || h->len > VGPU_REMOTE_MAX_LEN ||
        (h->flags & ~VGPU_REMOTE_ASYNC)) {
        errno = EPROTO;
        return -1;
    }
    return 0;
}
