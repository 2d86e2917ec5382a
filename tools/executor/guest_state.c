/* One guest's handles, and the executor's replies to it (executor.h). */
#include "tools/executor/executor.h"

#include "common/log.h"
#include "forwarder/remote/wire.h"

#include <stdlib.h>

static size_t slot_of(const struct vgpu_exec *x, uint64_t h)
{
    return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 17) & (x->handles_cap - 1);
}

bool vgpu_exec_handle_known(const struct vgpu_exec *x, uint64_t h)
{
    if (h <= 2) /* NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD */
        return true;
    if (!x->handles_cap)
        return false;
    for (size_t i = slot_of(x, h);; i = (i + 1) & (x->handles_cap - 1)) {
        if (x->handles[i] == h)
            return true;
        if (!x->handles[i])
            return false;
    }
}

static void insert(struct vgpu_exec *x, uint64_t h)
{
    size_t i = slot_of(x, h);
    while (x->handles[i] && x->handles[i] != h && x->handles[i] != UINT64_MAX)
        i = (i + 1) & (x->handles_cap - 1);
    if (x->handles[i] != h) {
        x->handles[i] = h;
        x->handles_used++;
    }
}

void vgpu_exec_handle_add(struct vgpu_exec *x, uint64_t h)
{
    if (h <= 2 || vgpu_exec_handle_known(x, h))
        return;
    if ((x->handles_used + 1) * 2 > x->handles_cap) {
        size_t cap = x->handles_cap ? x->handles_cap * 2 : 256;
        uint64_t *old = x->handles, *grown = calloc(cap, sizeof(*grown));
        if (!grown) {
            vgpu_error("executor: out of memory for the guest's handles");
            exit(1);
        }
        size_t old_cap = x->handles_cap;
        x->handles = grown;
        x->handles_cap = cap;
        x->handles_used = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i] && old[i] != UINT64_MAX)
                insert(x, old[i]);
        free(old);
    }
    insert(x, h);
}

void vgpu_exec_handle_drop(struct vgpu_exec *x, uint64_t h)
{
    if (h <= 2 || !x->handles_cap)
        return;
    for (size_t i = slot_of(x, h); x->handles[i]; i = (i + 1) & (x->handles_cap - 1))
        if (x->handles[i] == h) {
            x->handles[i] = UINT64_MAX; /* a tombstone: the probe goes on past it */
            return;
        }
}

int vgpu_exec_reply(struct vgpu_exec *x, int r, const struct iovec *iov, int n)
{
    if (x->async) { /* no reply: the first error waits for the next synchronizing call */
        if (r != 0 && x->deferred == 0)
            x->deferred = r;
        return 0;
    }
    if (x->sync && r == 0 && x->deferred != 0) {
        r = x->deferred;
        x->deferred = 0;
        n = 0; /* an error carries nothing back */
    }
    return vgpu_wire_send(x->fd, VGPU_REMOTE_REPLY, (uint32_t)r, 0, iov, n);
}

int vgpu_exec_malformed(const char *call, size_t len)
{
    vgpu_error("executor: a malformed %s (%zu bytes): closing", call, len);
    return VGPU_EXEC_CLOSE;
}
