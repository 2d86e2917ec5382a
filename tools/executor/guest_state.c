/* One guest's handles, and the executor's replies to it (executor.h). */
#define _GNU_SOURCE
#include "tools/executor/executor.h"

#include "common/log.h"
#include "forwarder/remote/wire.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(const struct vgpu_exec *x, uint64_t h)
{
    return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 17) & (x->handles_cap - 1);
}

bool vgpu_exec_handle_known(const struct vgpu_exec *x, uint64_t h, bool stream)
{
    if (h == 0 || (stream && h <= 2)) /* NULL; CU_STREAM_LEGACY, CU_STREAM_PER_THREAD */
        return true;
    if (h == UINT64_MAX || !x->handles_cap) /* the set's tombstone is nobody's handle */
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
    if (h <= 2 || h == UINT64_MAX || vgpu_exec_handle_known(x, h, false))
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

static void forget_layouts(struct vgpu_exec *x);

void vgpu_exec_handle_drop(struct vgpu_exec *x, uint64_t h)
{
    forget_layouts(x);
    if (h <= 2 || h == UINT64_MAX || !x->handles_cap)
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

bool vgpu_exec_device_range(struct vgpu_exec *x, uint64_t p, uint64_t n, const char *call)
{
    if (x->lib->id != 0)
        return false;
    if (!x->address_range)
        x->address_range = dlsym(x->driver, "cuMemGetAddressRange_v2");
    uint64_t base = 0;
    size_t size = 0;
    if (x->address_range && ((int (*)(uint64_t *, size_t *, uint64_t))x->address_range)(&base, &size, p) == 0 &&
        p >= base && p - base < size)
        return n <= size - (p - base);
    if (!x->said_pointer) { /* once a guest: a hostile one would fill the log */
        x->said_pointer = true;
        vgpu_warn("executor: %s with a device pointer that is none of the guest's allocations: refused (and "
                  "any more such, unsaid)",
                  call);
    }
    return false;
}

bool vgpu_exec_device_memory(struct vgpu_exec *x, uint64_t p, const char *call)
{
    return vgpu_exec_device_range(x, p, 1, call);
}

/* A kernel's parameter sizes as cuFuncGetParamInfo gave them: learnt once
 * per function, all forgotten at any drop of a handle (a module unloaded
 * may free functions whose values come back for others).  Owned by the
 * guest's executor (struct vgpu_exec's layouts). */
struct vgpu_exec_layout {
    struct vgpu_exec_layout *next;
    uint64_t f;
    unsigned n;
    uint32_t size[];
};

static void forget_layouts(struct vgpu_exec *x)
{
    while (x->layouts) {
        struct vgpu_exec_layout *l = x->layouts;
        x->layouts = l->next;
        free(l);
    }
}

bool vgpu_exec_params_match(struct vgpu_exec *x, uint64_t f, unsigned n, const uint64_t *sizes)
{
    const struct vgpu_exec_layout *l = x->layouts;
    while (l && l->f != f)
        l = l->next;
    if (!l) {
        int (*info)(uint64_t, size_t, size_t *, size_t *) =
            (int (*)(uint64_t, size_t, size_t *, size_t *))dlsym(x->driver, "cuFuncGetParamInfo");
        uint32_t size[VGPU_EXEC_MAX_PARAMS];
        unsigned count = 0;
        for (; info && count < VGPU_EXEC_MAX_PARAMS; count++) {
            size_t offset, bytes;
            if (info(f, count, &offset, &bytes) != 0)
                break;
            size[count] = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
        }
        struct vgpu_exec_layout *made = info ? malloc(sizeof(*made) + count * sizeof(uint32_t)) : NULL;
        if (!made)
            return false;
        made->f = f;
        made->n = count;
        memcpy(made->size, size, count * sizeof(uint32_t));
        made->next = x->layouts;
        x->layouts = made;
        l = made;
    }
    if (l->n != n)
        return false;
    for (unsigned i = 0; i < n; i++)
        if (sizes[i] != l->size[i])
            return false;
    return true;
}
