/* STATUS, WATCH, COMPUTE, CLUSTER and BIND requests for the tools; see mediator_query.h. */
#define _GNU_SOURCE
#include "tools/lib/mediator_query.h"

#include "common/error.h"
#include "common/contract/protocol/mediator_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vgpu_tool_dial(const char *path, char *err, size_t errlen)
{
    int fd, e = vgpu_mediator_connect(path, &fd);
    if (e == 0)
        return fd;
    return vgpu_fail(err, errlen, "cannot reach vgpu-mediatord at %s: %s%s", path, strerror(e),
                     e == ENOENT || e == ECONNREFUSED ? " (is it running? --socket names another socket)" : "");
}

/* One request of type request on fd, answered by a message of type answer within 5 seconds. */
static int ask_with(int fd, const char *path, uint16_t request, const void *payload, uint32_t len, uint16_t answer,
                    uint8_t **buf, size_t *cap, struct vgpu_msg *m, char *err, size_t errlen)
{
    char why[256] = "";
    int nfds = 0;
    memset(m, 0, sizeof(*m));
    int r = vgpu_proto_send(fd, request, payload, len, NULL, 0);
    if (r == 0 && vgpu_proto_recv(fd, buf, cap, VGPU_PROTO_MAX_REPLY, 5000, m, NULL, &nfds, why, sizeof(why)) == 0 &&
        m->type == answer)
        return 0;
    return vgpu_fail(err, errlen, "vgpu-mediatord at %s: %s", path,
                     r ? strerror(-r) : m->type == VGPU_MSG_REFUSE ? m->u.refuse.reason : why);
}

static int ask(int fd, const char *path, uint16_t request, uint16_t answer, uint8_t **buf, size_t *cap,
               struct vgpu_msg *m, char *err, size_t errlen)
{
    return ask_with(fd, path, request, NULL, 0, answer, buf, cap, m, err, errlen);
}

int vgpu_tool_cluster(int fd, const char *path, uint8_t **buf, size_t *cap, struct vgpu_msg *m, char *err,
                      size_t errlen)
{
    return ask(fd, path, VGPU_MSG_CLUSTER_REQUEST, VGPU_MSG_CLUSTER, buf, cap, m, err, errlen);
}

int vgpu_tool_bind(int fd, const char *path, const char *vgpu, uint32_t pid, char *cgroup, size_t cgroup_len,
                   char *err, size_t errlen)
{
    struct vgpu_msg_bind b = { .pid = pid };
    if (strlen(vgpu) >= sizeof(b.vgpu))
        return vgpu_fail(err, errlen, "%s is not a vGPU name (at most %zu characters)", vgpu, sizeof(b.vgpu) - 1);
    vgpu_proto_copy_string(b.vgpu, sizeof(b.vgpu), vgpu);
    uint8_t *buf = NULL;
    size_t cap = 0;
    struct vgpu_msg m;
    int r = ask_with(fd, path, VGPU_MSG_BIND, &b, sizeof(b), VGPU_MSG_BOUND, &buf, &cap, &m, err, errlen);
    if (r == 0)
        snprintf(cgroup, cgroup_len, "%s", m.u.bound.cgroup);
    free(buf);
    return r;
}

int vgpu_tool_status(int fd, const char *path, uint8_t **buf, size_t *cap, struct vgpu_msg *m, char *err,
                     size_t errlen)
{
    return ask(fd, path, VGPU_MSG_STATUS_REQUEST, VGPU_MSG_STATUS, buf, cap, m, err, errlen);
}

int vgpu_tool_watch(int fd, const char *path, uint8_t **buf, size_t *cap, struct vgpu_msg *m, char *err,
                    size_t errlen)
{
    return ask(fd, path, VGPU_MSG_WATCH_REQUEST, VGPU_MSG_WATCH, buf, cap, m, err, errlen);
}

int vgpu_tool_compute(int fd, const char *path, uint8_t **buf, size_t *cap, struct vgpu_msg *m, char *err,
                      size_t errlen)
{
    return ask(fd, path, VGPU_MSG_COMPUTE_REQUEST, VGPU_MSG_COMPUTE, buf, cap, m, err, errlen);
}
