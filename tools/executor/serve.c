/* One guest's executor: the handle set and the loop of calls (executor.h). */
#define _GNU_SOURCE
#include "tools/executor/executor.h"

#include "common/log.h"
#include "forwarder/remote/wire.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The driver's function of slot, looked up once; NULL when it has none. */
static void *function_of(struct vgpu_exec *x, unsigned slot)
{
    if (!x->fn[slot])
        x->fn[slot] = dlsym(x->driver, vgpu_exec_cuda_names[slot]);
    return x->fn[slot];
}

static int hello(struct vgpu_exec *x)
{
    struct vgpu_remote_hdr h;
    uint64_t words[2];
    if (vgpu_wire_read_hdr(x->fd, &h) != 0 || h.type != VGPU_REMOTE_HELLO || h.len != sizeof(words) ||
        vgpu_wire_read(x->fd, words, sizeof(words)) != 0) {
        vgpu_error("executor: the guest did not say hello: closing");
        return -1;
    }
    if (words[0] != VGPU_REMOTE_ABI_HASH) {
        vgpu_error("executor: guest %llu speaks another version of the driver's ABI (%016llx, this executor's "
                   "%016llx): refused",
                   (unsigned long long)words[1], (unsigned long long)words[0],
                   (unsigned long long)VGPU_REMOTE_ABI_HASH);
        vgpu_exec_reply(x, CUDA_ERROR_NOT_SUPPORTED, NULL, 0);
        return -1;
    }
    vgpu_info("executor: serving guest process %llu", (unsigned long long)words[1]);
    return vgpu_exec_reply(x, CUDA_SUCCESS, NULL, 0);
}

int vgpu_exec_one(struct vgpu_exec *x, const struct vgpu_remote_hdr *h, const void *payload)
{
    if (h->type != VGPU_REMOTE_CALL || h->call >= VGPU_REMOTE_CUDA_COUNT) {
        vgpu_error("executor: a message that is not a call of the driver (type %u, call %u): closing",
                   (unsigned)h->type, (unsigned)h->call);
        return VGPU_EXEC_CLOSE;
    }
    const struct vgpu_exec_call *c = &vgpu_exec_cuda_table[h->call];
    if ((h->flags & VGPU_REMOTE_ASYNC) && !c->async) {
        vgpu_error("executor: %s sent without waiting for its answer, which it needs: closing",
                   vgpu_exec_cuda_names[h->call]);
        return VGPU_EXEC_CLOSE;
    }
    x->async = (h->flags & VGPU_REMOTE_ASYNC) != 0;
    x->sync = c->sync;
    void *fn = function_of(x, h->call);
    int sent;
    if (!c->words && !c->manual) {
        sent = vgpu_exec_reply(x, CUDA_ERROR_NOT_SUPPORTED, NULL, 0);
    } else if (!fn) {
        sent = vgpu_exec_reply(x, CUDA_ERROR_NOT_FOUND, NULL, 0);
    } else if (c->manual) {
        sent = c->manual(x, fn, payload, h->len);
    } else {
        if (h->len != c->nin * sizeof(uint64_t)) {
            vgpu_error("executor: %s with %llu bytes of arguments, not %u: closing", vgpu_exec_cuda_names[h->call],
                       (unsigned long long)h->len, c->nin * 8);
            return VGPU_EXEC_CLOSE;
        }
        uint64_t out[8] = { 0 };
        CUresult r = c->words(x, fn, payload, out);
        struct iovec v = { out, r == CUDA_SUCCESS ? c->nout * sizeof(uint64_t) : 0 };
        sent = vgpu_exec_reply(x, r, &v, 1);
    }
    return sent;
}

int vgpu_exec_serve(int fd)
{
    struct vgpu_exec x = { .fd = fd };
    /* A connection handed over by the mediator comes non-blocking (its loop's). */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK))
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    x.driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!x.driver) {
        vgpu_error("executor: cannot load the CUDA driver (libcuda.so.1): %s", dlerror());
        return 1;
    }
    if (hello(&x) != 0)
        return 1;
    void *buf = NULL;
    size_t cap = 0;
    for (;;) {
        struct vgpu_remote_hdr h;
        if (vgpu_wire_read_hdr(fd, &h) != 0) {
            if (errno == 0)
                return 0; /* the guest went: its process ends, and the driver frees what it held */
            vgpu_error("executor: a broken message from the guest (%s): closing", strerror(errno));
            return 1;
        }
        if (h.len > cap) {
            void *grown = realloc(buf, h.len);
            if (!grown) {
                vgpu_error("executor: out of memory for a message of %llu bytes", (unsigned long long)h.len);
                return 1;
            }
            buf = grown;
            cap = h.len;
        }
        if (h.len && vgpu_wire_read(fd, buf, h.len) != 0)
            return 1;
        int sent = vgpu_exec_one(&x, &h, buf);
        if (sent == VGPU_EXEC_CLOSE)
            return 1;
        if (sent != 0)
            return errno == EPIPE || errno == ECONNRESET ? 0 : 1;
    }
}
