/*
 * A guest's page-locked memory counted against its vGPU's pinned = by the
 * mediator that started this executor (docs/guide/remote.md, "Executors'
 * limits"), on a connection of the executor's own: PIN asks before a block
 * is registered, and gives back after it is unregistered; what an executor
 * that dies held is given back by its end.  An executor no mediator started
 * (--listen), or whose mediator does not count, has the local bound alone
 * (shared_host.c).
 */
#include "forwarder/remote/executor/executor.h"

#include "common/contract/protocol/mediator_client.h"
#include "common/contract/protocol/protocol.h"
#include "common/log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The connection: -2 not made yet, -1 none (not counted).  Owned by the
 * calls below, under the lock. */
static int link_fd = -2;
static uint8_t *buf;
static size_t cap;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int connect_once(void)
{
    const char *path = getenv("VGPU_MEDIATOR_SOCKET");
    link_fd = -1;
    if (!path || !*path || strcmp(path, "none") == 0)
        return -1;
    int fd, e = vgpu_mediator_connect(path, &fd);
    if (e != 0) {
        vgpu_info("executor: page-locked memory is not counted by vgpu-mediatord at %s (%s): the executor's own "
                  "bound alone holds it", path, strerror(e));
        return -1;
    }
    link_fd = fd;
    return fd;
}

/* One PIN and its answer; false (and no connection from then on) when the
 * mediator does not count this executor's. */
static bool ask(uint64_t bytes, uint32_t flags, struct vgpu_msg_pinned *out)
{
    if (link_fd == -2)
        connect_once();
    if (link_fd < 0)
        return false;
    struct vgpu_msg_pin q = { .bytes = bytes, .flags = flags };
    struct vgpu_msg m = { 0 };
    int nfds = 0;
    char why[256] = "the mediator closed the connection";
    if (vgpu_proto_send(link_fd, VGPU_MSG_PIN, &q, sizeof(q), NULL, 0) == 0 &&
        vgpu_proto_recv(link_fd, &buf, &cap, VGPU_PROTO_MAX_REQUEST + 512, 5000, &m, NULL, &nfds, why,
                        sizeof(why)) == 0 &&
        m.type == VGPU_MSG_PINNED) {
        *out = m.u.pinned;
        return true;
    }
    vgpu_info("executor: vgpu-mediatord does not count page-locked memory for this executor (%s): the executor's "
              "own bound alone holds it", m.type == VGPU_MSG_REFUSE ? m.u.refuse.reason : why);
    close(link_fd);
    link_fd = -1;
    return false;
}

enum vgpu_exec_pin vgpu_exec_pin(uint64_t bytes, uint64_t *vgpu_held, uint64_t *limit)
{
    struct vgpu_msg_pinned r = { 0 };
    pthread_mutex_lock(&lock);
    bool counted = ask(bytes, 0, &r);
    pthread_mutex_unlock(&lock);
    *vgpu_held = r.vgpu_held;
    *limit = r.limit;
    return !counted ? VGPU_EXEC_PIN_UNCOUNTED : r.granted ? VGPU_EXEC_PIN_GRANTED : VGPU_EXEC_PIN_REFUSED;
}

void vgpu_exec_unpin(uint64_t bytes)
{
    struct vgpu_msg_pinned r;
    pthread_mutex_lock(&lock);
    if (link_fd >= 0)
        ask(bytes, VGPU_PIN_RELEASE, &r);
    pthread_mutex_unlock(&lock);
}
