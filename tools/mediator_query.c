/* STATUS, WATCH and COMPUTE requests for the tools; see mediator_query.h. */
#define _GNU_SOURCE
#include "tools/mediator_query.h"

#include "common/error.h"
#include "vgpu_backend/contract/protocol/mediator_client.h"

#include <errno.h>
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
static int ask(int fd, const char *path, uint16_t request, uint16_t answer, uint8_t **buf, size_t *cap,
               struct vgpu_msg *m, char *err, size_t errlen)
{
    char why[256] = "";
    int nfds = 0;
    memset(m, 0, sizeof(*m));
    int r = vgpu_proto_send(fd, request, NULL, 0, NULL, 0);
    if (r == 0 && vgpu_proto_recv(fd, buf, cap, VGPU_PROTO_MAX_REPLY, 5000, m, NULL, &nfds, why, sizeof(why)) == 0 &&
        m->type == answer)
        return 0;
    return vgpu_fail(err, errlen, "vgpu-mediatord at %s: %s", path,
                     r ? strerror(-r) : m->type == VGPU_MSG_REFUSE ? m->u.refuse.reason : why);
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
