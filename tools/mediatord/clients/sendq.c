/* Answers that wait for a slow reader; see sendq.h. */
#define _GNU_SOURCE
#include "tools/mediatord/clients/sendq.h"

#include "common/contract/protocol/protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct med_sendq_msg {
    struct med_sendq_msg *next;
    size_t len, sent;
    int fds[2];
    int nfds;     /* owned, sent with the first byte */
    uint8_t bytes[];
};

/* Bytes waiting in every connection's queue: the loop thread's count. */
static size_t queued;

/* Sends from m what the socket takes now: 0 (all of it), 1 (some left), -errno. */
static int push(int fd, struct med_sendq_msg *m, const int *fds, int nfds)
{
    union vgpu_proto_control control;
    while (m->sent < m->len) {
        struct iovec iov = { m->bytes + m->sent, m->len - m->sent };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (m->sent == 0 && nfds > 0)
            vgpu_proto_attach_fds(&mh, &control, fds, nfds);
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 1;
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        m->sent += (size_t)n;
    }
    return 0;
}

static void drop_fds(struct med_sendq_msg *m)
{
    for (int i = 0; i < m->nfds; i++)
        close(m->fds[i]);
    m->nfds = 0;
}

static void pop(struct med_sendq *q)
{
    struct med_sendq_msg *m = q->head;
    q->head = m->next;
    if (!q->head)
        q->tail = NULL;
    queued -= m->len - m->sent;
    drop_fds(m);
    free(m);
}

int med_sendq_send(struct med_sendq *q, int fd, uint16_t type, const void *payload, uint32_t len, const int *fds,
                   int nfds, uint64_t now_ms)
{
    if (nfds < 0 || nfds > 2)
        return -EINVAL;
    size_t total = VGPU_PROTO_HEADER_SIZE + (size_t)len;
    struct med_sendq_msg *m = malloc(sizeof(*m) + total);
    if (!m)
        return -ENOMEM;
    *m = (struct med_sendq_msg){ .len = total };
    struct vgpu_proto_header h;
    vgpu_proto_frame(&h, type, len);
    memcpy(m->bytes, &h, sizeof(h));
    if (len)
        memcpy(m->bytes + sizeof(h), payload, len);
    /* Sent at once where nothing waits before it: the descriptors are
     * only borrowed then. */
    int r = q->head ? 1 : push(fd, m, fds, nfds);
    if (r <= 0) {
        free(m);
        return r;
    }
    if (queued + (total - m->sent) > MED_SENDQ_MAX_BYTES) {
        free(m);
        return -ENOBUFS;
    }
    for (int i = 0; m->sent == 0 && i < nfds; i++) {
        if ((m->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 0)) < 0) {
            int e = errno;
            drop_fds(m);
            free(m);
            return -e;
        }
        m->nfds = i + 1;
    }
    queued += m->len - m->sent;
    if (!q->head)
        q->since_ms = now_ms;
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
    return 0;
}

int med_sendq_flush(struct med_sendq *q, int fd)
{
    while (q->head) {
        struct med_sendq_msg *m = q->head;
        size_t before = m->sent;
        int r = push(fd, m, m->fds, m->nfds);
        if (m->sent > 0)
            drop_fds(m); /* delivered with the first byte */
        queued -= m->sent - before;
        if (r != 0)
            return r;
        pop(q);
    }
    return 0;
}

void med_sendq_clear(struct med_sendq *q)
{
    while (q->head)
        pop(q);
}
