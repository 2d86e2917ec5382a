/* The mediator protocol: parsing, validation, sending; see protocol.h. */
#define _GNU_SOURCE
#include "common/contract/protocol/protocol.h"

#include "common/error.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct vgpu_proto_header) == VGPU_PROTO_HEADER_SIZE, "12-byte frame header");
_Static_assert(sizeof(struct vgpu_msg_hello) == 40, "HELLO is 40 bytes");
_Static_assert(sizeof(struct vgpu_msg_admit) == 40, "ADMIT is 40 bytes");
_Static_assert(sizeof(struct vgpu_msg_refuse) == 496, "REFUSE is 496 bytes");
_Static_assert(sizeof(struct vgpu_msg_entered) == 8, "ENTERED is 8 bytes");
_Static_assert(sizeof(struct vgpu_status_header) == 40, "STATUS header is 40 bytes");
_Static_assert(sizeof(struct vgpu_status_device) == 152, "STATUS device is 152 bytes");
_Static_assert(sizeof(struct vgpu_status_vgpu) == 56 + 16 * 152, "STATUS vGPU record");
_Static_assert(sizeof(struct vgpu_status_proc) == 192, "STATUS process record is 192 bytes");
_Static_assert(sizeof(struct vgpu_watch_header) == 48, "WATCH header is 48 bytes");
_Static_assert(sizeof(struct vgpu_watch_case) == 184, "WATCH case record is 184 bytes");
_Static_assert(sizeof(struct vgpu_compute_header) == 32, "COMPUTE header is 32 bytes");
_Static_assert(sizeof(struct vgpu_compute_device) == 80, "COMPUTE device record is 80 bytes");
_Static_assert(sizeof(struct vgpu_compute_proc) == 56, "COMPUTE process record is 56 bytes");
_Static_assert(sizeof(struct vgpu_compute_header) + VGPU_COMPUTE_MAX_DEVICES * sizeof(struct vgpu_compute_device) +
                       VGPU_COMPUTE_MAX_PROCS * sizeof(struct vgpu_compute_proc) <=
                   VGPU_PROTO_MAX_REPLY,
               "the largest COMPUTE is one a client reads");
_Static_assert(sizeof(struct vgpu_watch_header) + VGPU_WATCH_MAX_CASES * sizeof(struct vgpu_watch_case) <=
                   VGPU_PROTO_MAX_REPLY,
               "the largest WATCH is one a client reads");
_Static_assert(sizeof(struct vgpu_status_header) + VGPU_STATUS_MAX_VGPUS * sizeof(struct vgpu_status_vgpu) +
                       VGPU_STATUS_MAX_PROCS * sizeof(struct vgpu_status_proc) <=
                   VGPU_PROTO_MAX_REPLY,
               "the largest STATUS is one a client reads");

static bool terminated(const char *s, size_t size)
{
    return memchr(s, '\0', size) != NULL;
}

#define TERMINATED(field) terminated((field), sizeof(field))

static bool fixed(uint32_t length, size_t want, uint16_t type, char *err, size_t errlen)
{
    if (length == want)
        return true;
    vgpu_fail(err, errlen, "message type %u has %u payload bytes, want %zu", type, length, want);
    return false;
}

static ssize_t check_status(const uint8_t *p, uint32_t length, char *err, size_t errlen)
{
    struct vgpu_status_header h;
    if (length < sizeof(h))
        return vgpu_fail(err, errlen, "STATUS of %u bytes is shorter than its header", length);
    memcpy(&h, p, sizeof(h));
    if (h.nvgpus > VGPU_STATUS_MAX_VGPUS || h.nprocs > VGPU_STATUS_MAX_PROCS)
        return vgpu_fail(err, errlen, "STATUS counts %u vGPUs and %u processes (at most %d and %d)", h.nvgpus,
                       h.nprocs, VGPU_STATUS_MAX_VGPUS, VGPU_STATUS_MAX_PROCS);
    uint64_t want = sizeof(h) + (uint64_t)h.nvgpus * sizeof(struct vgpu_status_vgpu) +
                    (uint64_t)h.nprocs * sizeof(struct vgpu_status_proc);
    if (want != length)
        return vgpu_fail(err, errlen, "STATUS of %u vGPUs and %u processes takes %llu bytes, not %u", h.nvgpus,
                       h.nprocs, (unsigned long long)want, length);
    if (!TERMINATED(h.version))
        return vgpu_fail(err, errlen, "STATUS version string is not terminated");
    const uint8_t *q = p + sizeof(h);
    for (uint32_t i = 0; i < h.nvgpus; i++, q += sizeof(struct vgpu_status_vgpu)) {
        struct vgpu_status_vgpu v;
        memcpy(&v, q, sizeof(v));
        if (!TERMINATED(v.name) || v.ndev > VGPU_STATUS_MAX_DEVICES)
            return vgpu_fail(err, errlen, "STATUS vGPU record %u is malformed", i);
        for (uint32_t d = 0; d < v.ndev; d++)
            if (!TERMINATED(v.dev[d].uuid) || !TERMINATED(v.dev[d].gpu_name) || v.dev[d].compute > 100)
                return vgpu_fail(err, errlen, "STATUS vGPU record %u, device %u is malformed", i, d);
    }
    for (uint32_t i = 0; i < h.nprocs; i++, q += sizeof(struct vgpu_status_proc)) {
        struct vgpu_status_proc r;
        memcpy(&r, q, sizeof(r));
        if (r.vgpu >= h.nvgpus || !TERMINATED(r.comm) || !TERMINATED(r.user))
            return vgpu_fail(err, errlen, "STATUS process record %u is malformed", i);
    }
    return 0;
}

static ssize_t check_watch(const uint8_t *p, uint32_t length, char *err, size_t errlen)
{
    struct vgpu_watch_header h;
    if (length < sizeof(h))
        return vgpu_fail(err, errlen, "WATCH of %u bytes is shorter than its header", length);
    memcpy(&h, p, sizeof(h));
    if (h.ncases > VGPU_WATCH_MAX_CASES)
        return vgpu_fail(err, errlen, "WATCH counts %u processes (at most %d)", h.ncases, VGPU_WATCH_MAX_CASES);
    uint64_t want = sizeof(h) + (uint64_t)h.ncases * sizeof(struct vgpu_watch_case);
    if (want != length)
        return vgpu_fail(err, errlen, "WATCH of %u processes takes %llu bytes, not %u", h.ncases,
                         (unsigned long long)want, length);
    if (h.tolerance_percent > 100)
        return vgpu_fail(err, errlen, "WATCH tolerance of %u%% is over 100%%", h.tolerance_percent);
    const uint8_t *q = p + sizeof(h);
    for (uint32_t i = 0; i < h.ncases; i++, q += sizeof(struct vgpu_watch_case)) {
        struct vgpu_watch_case c;
        memcpy(&c, q, sizeof(c));
        if (c.rule < VGPU_WATCH_UNADMITTED || c.rule > VGPU_WATCH_OVER_SHARE || !TERMINATED(c.uuid) ||
            !TERMINATED(c.comm) || !TERMINATED(c.user) || !TERMINATED(c.vgpu))
            return vgpu_fail(err, errlen, "WATCH process record %u is malformed", i);
    }
    return 0;
}

static ssize_t check_compute(const uint8_t *p, uint32_t length, char *err, size_t errlen)
{
    struct vgpu_compute_header h;
    if (length < sizeof(h))
        return vgpu_fail(err, errlen, "COMPUTE of %u bytes is shorter than its header", length);
    memcpy(&h, p, sizeof(h));
    if (h.ndevs > VGPU_COMPUTE_MAX_DEVICES || h.nprocs > VGPU_COMPUTE_MAX_PROCS)
        return vgpu_fail(err, errlen, "COMPUTE counts %u devices and %u processes (at most %d and %d)", h.ndevs,
                         h.nprocs, VGPU_COMPUTE_MAX_DEVICES, VGPU_COMPUTE_MAX_PROCS);
    uint64_t want = sizeof(h) + (uint64_t)h.ndevs * sizeof(struct vgpu_compute_device) +
                    (uint64_t)h.nprocs * sizeof(struct vgpu_compute_proc);
    if (want != length)
        return vgpu_fail(err, errlen, "COMPUTE of %u devices and %u processes takes %llu bytes, not %u", h.ndevs,
                         h.nprocs, (unsigned long long)want, length);
    const uint8_t *q = p + sizeof(h);
    for (uint32_t i = 0; i < h.ndevs; i++, q += sizeof(struct vgpu_compute_device)) {
        struct vgpu_compute_device d;
        memcpy(&d, q, sizeof(d));
        if (!TERMINATED(d.vgpu) || d.device >= VGPU_STATUS_MAX_DEVICES || d.share > 100 ||
            d.mode > VGPU_COMPUTE_VIEW_CAP || d.held > 1000 || d.utilization > 1000)
            return vgpu_fail(err, errlen, "COMPUTE device record %u is malformed", i);
    }
    for (uint32_t i = 0; i < h.nprocs; i++, q += sizeof(struct vgpu_compute_proc)) {
        struct vgpu_compute_proc r;
        memcpy(&r, q, sizeof(r));
        if (!TERMINATED(r.vgpu) || r.device >= VGPU_STATUS_MAX_DEVICES || r.utilization > 1000)
            return vgpu_fail(err, errlen, "COMPUTE process record %u is malformed", i);
    }
    return 0;
}

static ssize_t check_cluster(const uint8_t *p, uint32_t length, char *err, size_t errlen)
{
    struct vgpu_cluster_header h;
    if (length < sizeof(h))
        return vgpu_fail(err, errlen, "CLUSTER of %u bytes is shorter than its header", length);
    memcpy(&h, p, sizeof(h));
    if (h.n > VGPU_CLUSTER_MAX)
        return vgpu_fail(err, errlen, "CLUSTER counts %u vGPUs (at most %d)", h.n, VGPU_CLUSTER_MAX);
    if (sizeof(h) + (uint64_t)h.n * sizeof(struct vgpu_cluster_vgpu) != length)
        return vgpu_fail(err, errlen, "CLUSTER of %u vGPUs takes %zu bytes, not %u", h.n,
                         sizeof(h) + (size_t)h.n * sizeof(struct vgpu_cluster_vgpu), length);
    const uint8_t *q = p + sizeof(h);
    for (uint32_t i = 0; i < h.n; i++, q += sizeof(struct vgpu_cluster_vgpu)) {
        struct vgpu_cluster_vgpu v;
        memcpy(&v, q, sizeof(v));
        if (!TERMINATED(v.name) || !TERMINATED(v.cls) || v.ndev > VGPU_STATUS_MAX_DEVICES || v.compute > 100 ||
            (v.flags & ~31u))
            return vgpu_fail(err, errlen, "CLUSTER record %u is malformed", i);
    }
    return 0;
}

ssize_t vgpu_proto_parse(const uint8_t *buf, size_t len, size_t max_payload, struct vgpu_msg *msg, char *err,
                         size_t errlen)
{
    struct vgpu_proto_header h;
    if (len < sizeof(h))
        return 0;
    memcpy(&h, buf, sizeof(h));
    if (h.magic != VGPU_PROTO_MAGIC)
        return vgpu_fail(err, errlen, "not a vgpu mediator message (magic 0x%08x)", h.magic);
    if (h.version != VGPU_PROTO_VERSION)
        return vgpu_fail(err, errlen, "protocol version %u; this side speaks version %d", h.version,
                       VGPU_PROTO_VERSION);
    if (h.length > max_payload)
        return vgpu_fail(err, errlen, "message type %u of %u bytes; at most %zu here", h.type, h.length, max_payload);
    if (len - sizeof(h) < h.length)
        return 0;
    const uint8_t *p = buf + sizeof(h);
    memset(msg, 0, sizeof(*msg));
    msg->type = h.type;
    msg->length = h.length;
    switch (h.type) {
    case VGPU_MSG_HELLO:
    case VGPU_MSG_REMOTE:
        if (!fixed(h.length, sizeof(msg->u.hello), h.type, err, errlen))
            return -1;
        memcpy(&msg->u.hello, p, sizeof(msg->u.hello));
        if (!TERMINATED(msg->u.hello.vgpu) ||
            (msg->u.hello.flags & ~(h.type == VGPU_MSG_HELLO ? VGPU_HELLO_REATTACH : 0u)) ||
            (!(msg->u.hello.flags & VGPU_HELLO_REATTACH) && msg->u.hello.slot != UINT32_MAX))
            return vgpu_fail(err, errlen, "malformed %s", h.type == VGPU_MSG_HELLO ? "HELLO" : "REMOTE");
        break;
    case VGPU_MSG_ADMIT:
    case VGPU_MSG_REMOTE_READY:
        if (!fixed(h.length, sizeof(msg->u.admit), h.type, err, errlen))
            return -1;
        memcpy(&msg->u.admit, p, sizeof(msg->u.admit));
        if (!TERMINATED(msg->u.admit.vgpu))
            return vgpu_fail(err, errlen, "malformed %s", h.type == VGPU_MSG_ADMIT ? "ADMIT" : "REMOTE_READY");
        break;
    case VGPU_MSG_REFUSE:
        if (!fixed(h.length, sizeof(msg->u.refuse), h.type, err, errlen))
            return -1;
        memcpy(&msg->u.refuse, p, sizeof(msg->u.refuse));
        if (!TERMINATED(msg->u.refuse.reason) || msg->u.refuse.code < VGPU_REFUSE_NOT_ADMITTED ||
            msg->u.refuse.code > VGPU_REFUSE_UNAVAILABLE)
            return vgpu_fail(err, errlen, "malformed REFUSE");
        break;
    case VGPU_MSG_ENTERED:
        if (!fixed(h.length, sizeof(msg->u.entered), h.type, err, errlen))
            return -1;
        memcpy(&msg->u.entered, p, sizeof(msg->u.entered));
        break;
    case VGPU_MSG_BIND:
        if (!fixed(h.length, sizeof(msg->u.bind), h.type, err, errlen))
            return -1;
        memcpy(&msg->u.bind, p, sizeof(msg->u.bind));
        if (!TERMINATED(msg->u.bind.vgpu) || msg->u.bind.flags)
            return vgpu_fail(err, errlen, "malformed BIND");
        break;
    case VGPU_MSG_BOUND:
        if (!fixed(h.length, sizeof(msg->u.bound), h.type, err, errlen))
            return -1;
        memcpy(&msg->u.bound, p, sizeof(msg->u.bound));
        if (!TERMINATED(msg->u.bound.vgpu) || !TERMINATED(msg->u.bound.cgroup))
            return vgpu_fail(err, errlen, "malformed BOUND");
        break;
    case VGPU_MSG_PIN:
        if (!fixed(h.length, sizeof(msg->u.pin), h.type, err, errlen))
            return -1;
        memcpy(&msg->u.pin, p, sizeof(msg->u.pin));
        if ((msg->u.pin.flags & ~VGPU_PIN_RELEASE) || msg->u.pin.reserved)
            return vgpu_fail(err, errlen, "malformed PIN");
        break;
    case VGPU_MSG_PINNED:
        if (!fixed(h.length, sizeof(msg->u.pinned), h.type, err, errlen))
            return -1;
        memcpy(&msg->u.pinned, p, sizeof(msg->u.pinned));
        if (msg->u.pinned.granted > 1)
            return vgpu_fail(err, errlen, "malformed PINNED");
        break;
    case VGPU_MSG_CLUSTER:
        if (check_cluster(p, h.length, err, errlen) != 0)
            return -1;
        msg->cluster = p;
        break;
    case VGPU_MSG_ENTER:
    case VGPU_MSG_CLUSTER_REQUEST:
    case VGPU_MSG_STATUS_REQUEST:
    case VGPU_MSG_WATCH_REQUEST:
    case VGPU_MSG_COMPUTE_REQUEST:
        if (!fixed(h.length, 0, h.type, err, errlen))
            return -1;
        break;
    case VGPU_MSG_STATUS:
        if (check_status(p, h.length, err, errlen) != 0)
            return -1;
        msg->status = p;
        break;
    case VGPU_MSG_WATCH:
        if (check_watch(p, h.length, err, errlen) != 0)
            return -1;
        msg->watch = p;
        break;
    case VGPU_MSG_COMPUTE:
        if (check_compute(p, h.length, err, errlen) != 0)
            return -1;
        msg->compute = p;
        break;
    default:
        return vgpu_fail(err, errlen, "unknown message type %u", h.type);
    }
    return (ssize_t)(sizeof(h) + h.length);
}

void vgpu_proto_cluster_header(const struct vgpu_msg *m, struct vgpu_cluster_header *h)
{
    memcpy(h, m->cluster, sizeof(*h));
}

void vgpu_proto_cluster_vgpu(const struct vgpu_msg *m, uint32_t i, struct vgpu_cluster_vgpu *v)
{
    memcpy(v, m->cluster + sizeof(struct vgpu_cluster_header) + (size_t)i * sizeof(*v), sizeof(*v));
}

void vgpu_proto_status_header(const struct vgpu_msg *m, struct vgpu_status_header *h)
{
    memcpy(h, m->status, sizeof(*h));
}

void vgpu_proto_status_vgpu(const struct vgpu_msg *m, uint32_t i, struct vgpu_status_vgpu *v)
{
    memcpy(v, m->status + sizeof(struct vgpu_status_header) + (size_t)i * sizeof(*v), sizeof(*v));
}

void vgpu_proto_status_proc(const struct vgpu_msg *m, uint32_t i, struct vgpu_status_proc *p)
{
    struct vgpu_status_header h;
    vgpu_proto_status_header(m, &h);
    memcpy(p,
           m->status + sizeof(h) + (size_t)h.nvgpus * sizeof(struct vgpu_status_vgpu) + (size_t)i * sizeof(*p),
           sizeof(*p));
}

void vgpu_proto_watch_header(const struct vgpu_msg *m, struct vgpu_watch_header *h)
{
    memcpy(h, m->watch, sizeof(*h));
}

void vgpu_proto_watch_case(const struct vgpu_msg *m, uint32_t i, struct vgpu_watch_case *c)
{
    memcpy(c, m->watch + sizeof(struct vgpu_watch_header) + (size_t)i * sizeof(*c), sizeof(*c));
}

void vgpu_proto_compute_header(const struct vgpu_msg *m, struct vgpu_compute_header *h)
{
    memcpy(h, m->compute, sizeof(*h));
}

void vgpu_proto_compute_device(const struct vgpu_msg *m, uint32_t i, struct vgpu_compute_device *d)
{
    memcpy(d, m->compute + sizeof(struct vgpu_compute_header) + (size_t)i * sizeof(*d), sizeof(*d));
}

void vgpu_proto_compute_proc(const struct vgpu_msg *m, uint32_t i, struct vgpu_compute_proc *p)
{
    struct vgpu_compute_header h;
    vgpu_proto_compute_header(m, &h);
    memcpy(p,
           m->compute + sizeof(h) + (size_t)h.ndevs * sizeof(struct vgpu_compute_device) +
               (size_t)i * sizeof(*p),
           sizeof(*p));
}

void vgpu_proto_frame(struct vgpu_proto_header *out, uint16_t type, uint32_t len)
{
    *out = (struct vgpu_proto_header){ .magic = VGPU_PROTO_MAGIC, .version = VGPU_PROTO_VERSION, .type = type,
                                       .length = len };
}

void vgpu_proto_attach_fds(struct msghdr *mh, union vgpu_proto_control *control, const int *fds, int nfds)
{
    memset(control, 0, sizeof(*control));
    mh->msg_control = control->buf;
    mh->msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
    struct cmsghdr *c = CMSG_FIRSTHDR(mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
}

int vgpu_proto_send(int sock, uint16_t type, const void *payload, uint32_t len, const int *fds, int nfds)
{
    struct vgpu_proto_header h;
    vgpu_proto_frame(&h, type, len);
    struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)payload, len } };
    union vgpu_proto_control control;
    struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
    if (nfds > 4)
        return -EINVAL;
    if (nfds > 0)
        vgpu_proto_attach_fds(&mh, &control, fds, nfds);
    size_t total = sizeof(h) + len, sent = 0;
    while (sent < total) {
        ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        sent += (size_t)n;
        /* The descriptors went with the first bytes; send the rest plainly. */
        mh.msg_control = NULL;
        mh.msg_controllen = 0;
        while (mh.msg_iovlen && (size_t)n >= mh.msg_iov[0].iov_len) {
            n -= (ssize_t)mh.msg_iov[0].iov_len;
            mh.msg_iov++;
            mh.msg_iovlen--;
        }
        if (mh.msg_iovlen) {
            mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + n;
            mh.msg_iov[0].iov_len -= (size_t)n;
        }
    }
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Keeps up to *nfds descriptors of a control message; closes the rest. */
static void take_fds(struct msghdr *mh, int *fds, int *nfds, int max)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (*nfds < max)
                fds[(*nfds)++] = fd;
            else
                close(fd);
        }
    }
}

/* Reads exactly want bytes into buf before deadline, keeping descriptors that come along. */
static int read_exact(int sock, uint8_t *buf, size_t want, int64_t deadline, int *fds, int *nfds, int max_fds,
                      char *err, size_t errlen)
{
    size_t have = 0;
    while (have < want) {
        int64_t left = deadline - now_ms();
        struct pollfd p = { .fd = sock, .events = POLLIN };
        int r = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0) {
            snprintf(err, errlen, "no answer within the time allowed");
            return -1;
        }
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(sizeof(int) * 4)];
        } control;
        struct iovec iov = { buf + have, want - have };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf) };
        ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "%s", n == 0 ? "the connection was closed" : strerror(errno));
            return -1;
        }
        take_fds(&mh, fds, nfds, max_fds);
        have += (size_t)n;
    }
    return 0;
}

int vgpu_proto_recv(int sock, uint8_t **buf, size_t *cap, size_t max_payload, int timeout_ms, struct vgpu_msg *msg,
                    int *fds, int *nfds, char *err, size_t errlen)
{
    int max_fds = *nfds;
    *nfds = 0;
    int64_t deadline = now_ms() + timeout_ms;
    struct vgpu_proto_header h;
    int rc = -1;
    if (read_exact(sock, (uint8_t *)&h, sizeof(h), deadline, fds, nfds, max_fds, err, errlen) != 0)
        goto out;
    /* Validate the header before sizing a buffer from it. */
    if (vgpu_proto_parse((const uint8_t *)&h, sizeof(h), max_payload, msg, err, errlen) < 0)
        goto out;
    size_t need = sizeof(h) + h.length;
    if (need > *cap) {
        uint8_t *grown = realloc(*buf, need);
        if (!grown) {
            snprintf(err, errlen, "out of memory for a %zu-byte message", need);
            goto out;
        }
        *buf = grown;
        *cap = need;
    }
    memcpy(*buf, &h, sizeof(h));
    if (read_exact(sock, *buf + sizeof(h), h.length, deadline, fds, nfds, max_fds, err, errlen) != 0)
        goto out;
    rc = vgpu_proto_parse(*buf, need, max_payload, msg, err, errlen) == (ssize_t)need ? 0 : -1;
out:
    if (rc != 0) {
        for (int i = 0; i < *nfds; i++)
            close(fds[i]);
        *nfds = 0;
    }
    return rc;
}

void vgpu_proto_copy_string(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}
