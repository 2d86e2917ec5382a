/* One guest's handles, the driver's functions it reaches, and the executor's replies to it (executor.h). */
#define _GNU_SOURCE
#include "forwarder/remote/executor/executor.h"

#include "common/log.h"
#include "forwarder/remote/transport/wire.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *vgpu_exec_function(struct vgpu_exec *x, unsigned slot)
{
    void *f = __atomic_load_n(&x->fn[slot], __ATOMIC_ACQUIRE);
    if (!f) { /* lanes may look it up at once: the same answer */
        f = dlsym(x->driver, x->lib->names[slot]);
        __atomic_store_n(&x->fn[slot], f, __ATOMIC_RELEASE);
    }
    return f;
}

bool vgpu_exec_say_once(struct vgpu_exec *x, bool *said)
{
    pthread_mutex_lock(&x->s->mu);
    bool first = !*said;
    *said = true;
    pthread_mutex_unlock(&x->s->mu);
    return first;
}

static int by_name(const void *key, const void *name)
{
    return strcmp(key, *(const char *const *)name);
}

void *vgpu_exec_function_named(struct vgpu_exec *x, const char *name)
{
    const char *const *at = bsearch(name, x->lib->names, x->lib->count, sizeof(*x->lib->names), by_name);
    return at ? vgpu_exec_function(x, (unsigned)(at - x->lib->names)) : NULL;
}

static size_t slot_of(const struct vgpu_exec_set *s, uint64_t h)
{
    return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 17) & (s->cap - 1);
}

/* An open-addressing set of handles: 0 is an empty slot, UINT64_MAX a
 * tombstone (nobody's handle either). */
static bool set_has(const struct vgpu_exec_set *s, uint64_t h)
{
    if (h == UINT64_MAX || !s->cap)
        return false;
    for (size_t i = slot_of(s, h);; i = (i + 1) & (s->cap - 1)) {
        if (s->v[i] == h)
            return true;
        if (!s->v[i])
            return false;
    }
}

static void insert(struct vgpu_exec_set *s, uint64_t h)
{
    size_t i = slot_of(s, h);
    while (s->v[i] && s->v[i] != h && s->v[i] != UINT64_MAX)
        i = (i + 1) & (s->cap - 1);
    if (s->v[i] != h) {
        s->v[i] = h;
        s->used++;
    }
}

static void set_add(struct vgpu_exec_set *s, uint64_t h)
{
    if (h <= 2 || h == UINT64_MAX || set_has(s, h))
        return;
    if ((s->used + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        uint64_t *old = s->v, *grown = calloc(cap, sizeof(*grown));
        if (!grown) {
            vgpu_error("executor: out of memory for the guest's handles");
            exit(1);
        }
        size_t old_cap = s->cap;
        s->v = grown;
        s->cap = cap;
        s->used = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i] && old[i] != UINT64_MAX)
                insert(s, old[i]);
        free(old);
    }
    insert(s, h);
}

static void set_drop(struct vgpu_exec_set *s, uint64_t h)
{
    if (h <= 2 || h == UINT64_MAX || !s->cap)
        return;
    for (size_t i = slot_of(s, h); s->v[i]; i = (i + 1) & (s->cap - 1))
        if (s->v[i] == h) {
            s->v[i] = UINT64_MAX; /* a tombstone: the probe goes on past it */
            return;
        }
}

bool vgpu_exec_handle_known(const struct vgpu_exec *x, uint64_t h, bool stream)
{
    if (h == 0 || (stream && h <= 2)) /* NULL; CU_STREAM_LEGACY, CU_STREAM_PER_THREAD */
        return true;
    pthread_mutex_lock(&x->s->mu);
    bool known = set_has(&x->s->handles, h);
    pthread_mutex_unlock(&x->s->mu);
    return known;
}

void vgpu_exec_handle_add(struct vgpu_exec *x, uint64_t h)
{
    pthread_mutex_lock(&x->s->mu);
    set_add(&x->s->handles, h);
    pthread_mutex_unlock(&x->s->mu);
}

static void forget_layouts(struct vgpu_exec *x);

void vgpu_exec_kernel_add(struct vgpu_exec *x, uint64_t h, uint64_t library)
{
    struct vgpu_exec_kernel *k = malloc(sizeof(*k));
    if (!k) {
        vgpu_error("executor: out of memory for the guest's kernels");
        exit(1);
    }
    k->kernel = h;
    k->library = library;
    pthread_mutex_lock(&x->s->mu);
    set_add(&x->s->handles, h);
    set_add(&x->s->kernels, h);
    k->next = x->s->kernel_of;
    x->s->kernel_of = k;
    pthread_mutex_unlock(&x->s->mu);
}

void vgpu_exec_context_changed(struct vgpu_exec *x)
{
    pthread_mutex_lock(&x->s->mu);
    forget_layouts(x);
    pthread_mutex_unlock(&x->s->mu);
}

bool vgpu_exec_is_kernel(const struct vgpu_exec *x, uint64_t h)
{
    pthread_mutex_lock(&x->s->mu);
    bool kernel = set_has(&x->s->kernels, h);
    pthread_mutex_unlock(&x->s->mu);
    return kernel;
}

static void forget_layouts(struct vgpu_exec *x);

void vgpu_exec_handle_drop(struct vgpu_exec *x, uint64_t h)
{
    struct vgpu_exec_session *s = x->s;
    pthread_mutex_lock(&s->mu);
    forget_layouts(x);
    set_drop(&s->handles, h);
    set_drop(&s->kernels, h);
    /* A library's kernels end with it. */
    for (struct vgpu_exec_kernel **at = &s->kernel_of; *at;) {
        struct vgpu_exec_kernel *k = *at;
        if (k->library == h) {
            set_drop(&s->handles, k->kernel);
            set_drop(&s->kernels, k->kernel);
            *at = k->next;
            free(k);
        } else {
            at = &k->next;
        }
    }
    pthread_mutex_unlock(&s->mu);
}

int vgpu_exec_reply(struct vgpu_exec *x, int r, const struct iovec *iov, int n)
{
    if (r != 0) /* the guest's own errors, for whoever debugs it (VGPU_LOG=debug) */
        vgpu_debug("executor: %s%s returned %d", x->call ? x->call : "a call", x->async ? " (asynchronous)" : "", r);
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
    int sent = vgpu_wire_send(&x->wire, VGPU_REMOTE_REPLY, (uint32_t)r, 0, iov, n);
    if (x->fd_back >= 0) { /* the guest reads it only after a success */
        if (sent == 0 && r == 0)
            sent = vgpu_wire_send_fd(x->wire.fd, VGPU_REMOTE_REPLY, 0, NULL, 0, x->fd_back);
        close(x->fd_back);
        x->fd_back = -1;
    }
    return sent;
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
    int (*address_range)(uint64_t *, size_t *, uint64_t) =
        (int (*)(uint64_t *, size_t *, uint64_t))vgpu_exec_function_named(x, "cuMemGetAddressRange_v2");
    uint64_t base = 0;
    size_t size = 0;
    int r = address_range ? address_range(&base, &size, p) : -1;
    if (r == 0 && p >= base && p - base < size && n <= size - (p - base))
        return true;
    pthread_mutex_lock(&x->s->mu);
    bool reserved = false;
    for (const struct vgpu_exec_range *g = x->s->reserved; g && !reserved; g = g->next)
        reserved = p >= g->base && p - g->base < g->size && n <= g->size - (p - g->base);
    pthread_mutex_unlock(&x->s->mu);
    if (reserved)
        return true;
    if (vgpu_exec_say_once(x, &x->s->said_pointer)) { /* once a guest: a hostile one would fill the log */
        vgpu_warn("executor: %s with a device pointer that is none of the guest's allocations: refused (and "
                  "any more such, unsaid): %#llx, %llu bytes; the driver's range: %d, %#llx, %zu bytes",
                  call, (unsigned long long)p, (unsigned long long)n, r, (unsigned long long)base, size);
    }
    return false;
}

bool vgpu_exec_device_memory(struct vgpu_exec *x, uint64_t p, const char *call)
{
    return vgpu_exec_device_range(x, p, 1, call);
}

bool vgpu_exec_device_rows(struct vgpu_exec *x, uint64_t p, uint64_t pitch, uint64_t width, uint64_t size,
                           uint64_t height, const char *call)
{
    uint64_t row, extent;
    if (!width || !height)
        return vgpu_exec_device_memory(x, p, call);
    if (__builtin_mul_overflow(width, size, &row) || __builtin_mul_overflow(height - 1, pitch, &extent) ||
        __builtin_add_overflow(extent, row, &extent))
        return false;
    return vgpu_exec_device_range(x, p, extent, call);
}

/* A kernel's parameter sizes as cuFuncGetParamInfo gave them: learnt once
 * per function, all forgotten at any drop of a handle (a module unloaded
 * may free functions whose values come back for others).  The session's
 * (its layouts), under its mu. */
struct vgpu_exec_layout {
    struct vgpu_exec_layout *next;
    uint64_t f;
    unsigned n;
    uint32_t size[];
};

/* Under the session's mu; a layout learnt before it is not kept. */
static void forget_layouts(struct vgpu_exec *x)
{
    x->s->layouts_forgotten++;
    while (x->s->layouts) {
        struct vgpu_exec_layout *l = x->s->layouts;
        x->s->layouts = l->next;
        free(l);
    }
}

/* f's n parameter sizes as learnt, into size[]: whether they were; else
 * the count of forgettings, which a layout learnt now is of. */
static bool learnt(struct vgpu_exec *x, uint64_t f, unsigned *n, uint32_t *size, uint64_t *forgotten)
{
    pthread_mutex_lock(&x->s->mu);
    *forgotten = x->s->layouts_forgotten;
    const struct vgpu_exec_layout *l = x->s->layouts;
    while (l && l->f != f)
        l = l->next;
    if (l) {
        *n = l->n;
        memcpy(size, l->size, l->n * sizeof(uint32_t));
    }
    pthread_mutex_unlock(&x->s->mu);
    return l != NULL;
}

bool vgpu_exec_params_match(struct vgpu_exec *x, uint64_t f, unsigned n, const uint32_t *sizes)
{
    uint32_t size[VGPU_EXEC_MAX_PARAMS];
    unsigned count = 0;
    uint64_t forgotten;
    if (!learnt(x, f, &count, size, &forgotten)) {
        /* A library's kernel (cuLibraryGetKernel) launches as a function does; its own call says its parameters. */
        int (*info)(uint64_t, size_t, size_t *, size_t *) =
            (int (*)(uint64_t, size_t, size_t *, size_t *))vgpu_exec_function_named(
                x, vgpu_exec_is_kernel(x, f) ? "cuKernelGetParamInfo" : "cuFuncGetParamInfo");
        for (; info && count < VGPU_EXEC_MAX_PARAMS; count++) {
            size_t offset, bytes;
            int r = info(f, count, &offset, &bytes);
            if (r == 1 /* CUDA_ERROR_INVALID_VALUE: past the last parameter */)
                break;
            if (r != 0) /* not a function the driver knows: no layout, no launch */
                return false;
            size[count] = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
        }
        if (!info || count == VGPU_EXEC_MAX_PARAMS)
            return false;
        struct vgpu_exec_layout *made = malloc(sizeof(*made) + count * sizeof(uint32_t));
        if (made) {
            made->f = f;
            made->n = count;
            memcpy(made->size, size, count * sizeof(uint32_t));
            pthread_mutex_lock(&x->s->mu);
            bool current = forgotten == x->s->layouts_forgotten; /* no module unloaded meanwhile */
            if (current) {
                made->next = x->s->layouts;
                x->s->layouts = made;
            }
            pthread_mutex_unlock(&x->s->mu);
            if (!current)
                free(made);
        }
    }
    if (count != n)
        return false;
    for (unsigned i = 0; i < n; i++)
        if (sizes[i] != size[i])
            return false;
    return true;
}
