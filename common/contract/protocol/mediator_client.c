/* The client side of vgpu-mediatord; see mediator_client.h. */
#define _GNU_SOURCE
#include "common/contract/protocol/mediator_client.h"

#include "common/error.h"
#include "common/operator.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* How long a process waits for the mediator before giving up on it. */
#define ANSWER_MS 5000
/* A refusal sent before the connection closed is already there to read. */
#define REFUSAL_MS 100

/* ask()'s answers besides 0: the mediator said no, or there was no answer. */
enum { ASK_REFUSED = 1, ASK_NO_ANSWER = -1 };

int vgpu_mediator_connect(const char *path, int *fd)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(sa.sun_path))
        return ENAMETOOLONG;
    strcpy(sa.sun_path, path);
    *fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*fd < 0)
        return errno;
    if (connect(*fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
        return 0;
    int e = errno;
    close(*fd);
    *fd = -1;
    return e;
}

static void hang_up(struct vgpu_mediator_link *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

/*
 * Connects: 0, VGPU_MEDIATOR_NONE when there is no mediator, or -1 with err.
 * The default socket missing means no mediator; a socket that was asked for
 * by name must be there (a typo must not run a tenant without its limits);
 * "none" asks for no mediator.
 */
static int dial(struct vgpu_mediator_link *l, char *err, size_t errlen)
{
    const char *path = l->required[0] ? l->required : getenv("VGPU_MEDIATOR_SOCKET");
    bool named = path && *path;
    if (named && strcmp(path, "none") == 0 && !l->required[0])
        return VGPU_MEDIATOR_NONE;
    if (l->required[0]) {
        snprintf(l->socket, sizeof(l->socket), "%s", path);
        int e = vgpu_mediator_connect(path, &l->fd);
        if (e == 0)
            return 0;
        return vgpu_fail(err, errlen, "the operator requires vgpu-mediatord (%s), and its socket %s %s: ask the "
                         "operator to start it", VGPU_OPERATOR_CONFIG, path,
                         e == ENOENT || e == ENOTDIR ? "is missing"
                         : e == ECONNREFUSED         ? "is there, but no mediator answers on it"
                                                     : strerror(e));
    }
    if (!named)
        path = VGPU_MEDIATOR_DEFAULT_SOCKET;
    snprintf(l->socket, sizeof(l->socket), "%s", path);
    int e = vgpu_mediator_connect(path, &l->fd);
    if (e == 0)
        return 0;
    if ((e == ENOENT || e == ENOTDIR) && !named)
        return VGPU_MEDIATOR_NONE;
    if (e == ENOENT || e == ENOTDIR)
        return vgpu_fail(err, errlen, "VGPU_MEDIATOR_SOCKET=%s: no such socket; start vgpu-mediatord there, or set "
                         "VGPU_MEDIATOR_SOCKET=none to run without one", path);
    /* A socket nobody listens on is a mediator that stopped: fail closed,
     * rather than run the operator's tenants without their quotas. */
    if (e == ECONNREFUSED)
        return vgpu_fail(err, errlen, "vgpu-mediatord's socket %s is there, but no mediator answers on it: start "
                         "vgpu-mediatord, or remove the socket to run without one", path);
    if (e == EACCES || e == EPERM)
        return vgpu_fail(err, errlen, "vgpu-mediatord at %s does not let this user connect (%s): ask the operator "
                         "to add it to the socket's group", path, strerror(e));
    return vgpu_fail(err, errlen, "cannot connect to vgpu-mediatord at %s: %s", path, strerror(e));
}

/* One request, one answer; the answer's descriptors go to fds.  0, or
 * ASK_REFUSED / ASK_NO_ANSWER with err. */
static int ask(struct vgpu_mediator_link *l, uint16_t type, const void *payload, uint32_t len, struct vgpu_msg *answer,
               int *fds, int *nfds, char *err, size_t errlen)
{
    int sent = l->fd >= 0 ? vgpu_proto_send(l->fd, type, payload, len, NULL, 0) : -ENOTCONN;
    /* A mediator that refuses a connection as it comes (a cap on
     * connections) says why and closes before reading: the request meets
     * a closed socket, and the refusal waits to be read. */
    if (sent != 0 && sent != -EPIPE && sent != -ECONNRESET) {
        vgpu_fail(err, errlen, "vgpu-mediatord at %s: %s", l->socket, strerror(-sent));
        return ASK_NO_ANSWER;
    }
    uint8_t *buf = NULL;
    size_t cap = 0;
    char why[256];
    /* An answer is at most a REFUSE: a STATUS is for tools. */
    int r = vgpu_proto_recv(l->fd, &buf, &cap, sizeof(struct vgpu_msg_refuse), sent ? REFUSAL_MS : ANSWER_MS,
                            answer, fds, nfds, why, sizeof(why));
    free(buf);
    if (r != 0 && sent != 0) {
        vgpu_fail(err, errlen, "vgpu-mediatord at %s: %s", l->socket, strerror(-sent));
        return ASK_NO_ANSWER;
    }
    if (r != 0) {
        vgpu_fail(err, errlen, "vgpu-mediatord at %s did not answer: %s", l->socket, why);
        return ASK_NO_ANSWER;
    }
    if (answer->type == VGPU_MSG_REFUSE) {
        vgpu_fail(err, errlen, "vgpu-mediatord refused this process: %s", answer->u.refuse.reason);
        return ASK_REFUSED;
    }
    return 0;
}

static void close_all(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        close(fds[i]);
}

int vgpu_mediator_join(struct vgpu_mediator_link *l, struct vgpu_bar0_map *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    m->fd = -1;
    m->slot = -1;
    int r = dial(l, err, errlen);
    if (r != 0)
        return r;
    struct vgpu_msg_hello hello = { .slot = UINT32_MAX };
    const char *name = getenv("VGPU_NAME");
    if (name && strlen(name) >= sizeof(hello.vgpu)) {
        hang_up(l);
        return vgpu_fail(err, errlen, "VGPU_NAME=%s: a vGPU name has at most %zu characters", name,
                         sizeof(hello.vgpu) - 1);
    }
    vgpu_proto_copy_string(hello.vgpu, sizeof(hello.vgpu), name);
    struct vgpu_msg answer;
    int fds[2], nfds = 2;
    if (ask(l, VGPU_MSG_HELLO, &hello, sizeof(hello), &answer, fds, &nfds, err, errlen) != 0) {
        hang_up(l);
        return VGPU_MEDIATOR_REFUSED;
    }
    if (answer.type != VGPU_MSG_ADMIT || nfds != 2) {
        close_all(fds, nfds);
        hang_up(l);
        return vgpu_fail(err, errlen, "vgpu-mediatord at %s answered HELLO with message %u and %d descriptors",
                         l->socket, answer.type, nfds);
    }
    char why[512] = "cannot read the descriptors vgpu-mediatord sent";
    struct stat st;
    m->bar = fstat(fds[1], &st) == 0 ? vgpu_bar0_map_split(fds[0], fds[1], false, why, sizeof(why)) : NULL;
    close_all(fds, nfds);
    if (!m->bar) {
        hang_up(l);
        return vgpu_fail(err, errlen, "%s", why);
    }
    snprintf(l->vgpu, sizeof(l->vgpu), "%s", answer.u.admit.vgpu);
    l->epoch = answer.u.admit.epoch;
    l->status_dev = (uint64_t)st.st_dev;
    l->status_ino = (uint64_t)st.st_ino;
    snprintf(m->path, sizeof(m->path), "\"%s\" (vgpu-mediatord)", l->vgpu);
    return VGPU_MEDIATOR_ADMITTED;
}

/* The connection is gone (the mediator restarted since this process
 * joined): joins again, into the same vGPU, with a fresh mapping of it. */
static int join_again(struct vgpu_mediator_link *l, struct vgpu_bar0_map *m, char *err, size_t errlen)
{
    char was[VGPU_NAME_LEN];
    struct vgpu_bar0_map fresh;
    memcpy(was, l->vgpu, sizeof(was));
    hang_up(l);
    if (vgpu_mediator_join(l, &fresh, err, errlen) != VGPU_MEDIATOR_ADMITTED)
        return -1;
    if (strcmp(was, l->vgpu) != 0) {
        vgpu_bar0_close(&fresh);
        hang_up(l);
        return vgpu_fail(err, errlen, "vgpu-mediatord now puts this process in vGPU \"%s\", not \"%s\" as before",
                         l->vgpu, was);
    }
    *m = fresh; /* the old mapping stays mapped: pointers into it may live on */
    return 0;
}

int vgpu_mediator_enter(struct vgpu_mediator_link *l, struct vgpu_bar0_map *m, char *err, size_t errlen)
{
    struct vgpu_msg answer;
    int nfds = 0;
    int r = ask(l, VGPU_MSG_ENTER, NULL, 0, &answer, NULL, &nfds, err, errlen);
    if (r == ASK_NO_ANSWER && join_again(l, m, err, errlen) == 0)
        r = ask(l, VGPU_MSG_ENTER, NULL, 0, &answer, NULL, &nfds, err, errlen);
    if (r != 0)
        return -1;
    if (answer.type != VGPU_MSG_ENTERED)
        return vgpu_fail(err, errlen, "vgpu-mediatord answered ENTER with message type %u", answer.type);
    if (answer.u.entered.slot >= VGPU_BAR0_MAX_PROCS)
        return vgpu_fail(err, errlen, "vgpu-mediatord gave slot %u of a table of %d", answer.u.entered.slot,
                         VGPU_BAR0_MAX_PROCS);
    m->slot = (int)answer.u.entered.slot;
    m->owner = atomic_load(&m->bar->procs[m->slot].owner);
    m->pid = getpid();
    return 0;
}

/* Is the connection still open, the mediator at its other end? */
static bool connected(const struct vgpu_mediator_link *l)
{
    struct pollfd p = { .fd = l->fd, .events = POLLIN | POLLRDHUP };
    return l->fd >= 0 && poll(&p, 1, 0) >= 0 && !(p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL));
}

/* Maps the new start's config page (config_fd) over the window's first
 * page, once it says it is the same vGPU with the same devices. */
static int take_config_page(const struct vgpu_mediator_link *l, struct vgpu_bar0 *b, int config_fd, char *err,
                            size_t errlen)
{
    /* Looked at first in a whole window of its own, so that the checks
     * may read any of it. */
    struct vgpu_bar0 *fresh = calloc(1, sizeof(*fresh));
    void *page = mmap(NULL, VGPU_BAR0_CONFIG_PAGE, PROT_READ, MAP_SHARED, config_fd, 0);
    if (!fresh || page == MAP_FAILED) {
        free(fresh);
        return vgpu_fail(err, errlen, "cannot read vgpu-mediatord's new config page: %s", strerror(errno));
    }
    memcpy(fresh, page, VGPU_BAR0_CONFIG_PAGE);
    munmap(page, VGPU_BAR0_CONFIG_PAGE);
    char why[512] = "not a mediated window";
    bool same = vgpu_bar0_validate(fresh, sizeof(struct vgpu_bar0), why, sizeof(why)) == 0 &&
                fresh->header.flags == VGPU_BAR0_MEDIATED && strcmp(fresh->header.name, l->vgpu) == 0 &&
                fresh->config.device_count == b->config.device_count;
    for (uint32_t d = 0; same && d < fresh->config.device_count; d++)
        same = strcmp(fresh->config.device[d].physical, b->config.device[d].physical) == 0;
    free(fresh);
    if (!same)
        return vgpu_fail(err, errlen, "vgpu-mediatord's new config page is not vGPU %s's with its devices (%s)", l->vgpu,
                         why);
    /* One call replaces the page: another thread reading it meanwhile
     * waits on the fault and reads the new one. */
    if (mmap(b, VGPU_BAR0_CONFIG_PAGE, PROT_READ, MAP_SHARED | MAP_FIXED, config_fd, 0) == MAP_FAILED)
        return vgpu_fail(err, errlen, "cannot map vgpu-mediatord's new config page: %s", strerror(errno));
    return 0;
}

int vgpu_mediator_reattach(struct vgpu_mediator_link *l, const struct vgpu_bar0_map *m, char *err, size_t errlen)
{
    if (connected(l))
        return vgpu_fail(err, errlen, "vgpu-mediatord did not restart (this process's connection to it is open): "
                         "another process of vGPU %s changed its window's epoch", l->vgpu);
    hang_up(l);
    int r = dial(l, err, errlen);
    if (r == VGPU_MEDIATOR_NONE)
        return vgpu_fail(err, errlen, "vgpu-mediatord's socket %s is gone", l->socket);
    if (r != 0)
        return -1;
    struct vgpu_msg_hello hello = { .flags = VGPU_HELLO_REATTACH, .slot = (uint32_t)m->slot };
    memcpy(hello.vgpu, l->vgpu, sizeof(hello.vgpu));
    struct vgpu_msg answer;
    int fds[2], nfds = 2;
    if (ask(l, VGPU_MSG_HELLO, &hello, sizeof(hello), &answer, fds, &nfds, err, errlen) != 0) {
        hang_up(l);
        return -1;
    }
    struct stat st;
    if (answer.type != VGPU_MSG_ADMIT || answer.u.admit.slot != (uint32_t)m->slot || nfds != 2) {
        r = vgpu_fail(err, errlen, "vgpu-mediatord did not take slot %d back", m->slot);
    } else if (fstat(fds[1], &st) != 0 || (uint64_t)st.st_dev != l->status_dev ||
               (uint64_t)st.st_ino != l->status_ino) {
        /* It made the vGPU a new window: this one is no longer counted. */
        r = vgpu_fail(err, errlen, "vgpu-mediatord gave vGPU %s a new window, not the one this process uses", l->vgpu);
    } else {
        r = take_config_page(l, m->bar, fds[0], err, errlen);
    }
    close_all(fds, nfds);
    if (r != 0) {
        hang_up(l);
        return -1;
    }
    l->epoch = answer.u.admit.epoch;
    return 0;
}

void vgpu_mediator_forget(struct vgpu_mediator_link *l)
{
    hang_up(l);
}
