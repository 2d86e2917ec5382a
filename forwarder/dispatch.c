#define _GNU_SOURCE
#include "forwarder/dispatch.h"

#include "common/log.h"
#include "common/operator.h"
#include "forwarder/pathfinder.h"
#include "forwarder/remote/guest/mode.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { UNINIT = 0, BUSY = 1, READY = 2 };

struct revmap_entry {
    uintptr_t addr;
    unsigned slot;
};

struct vgpu_revmap {
    size_t n;
    struct revmap_entry e[];
};

/* The dispatch tables of this library copy, for the fork handler. */
static struct vgpu_dispatch *registered[2];
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A fork while another thread was initialising leaves the child with a lock
 * held by a thread that does not exist there: start over in the child. */
static void child_after_fork(void)
{
    for (size_t i = 0; i < sizeof(registered) / sizeof(*registered); i++) {
        struct vgpu_dispatch *d = registered[i];
        if (!d)
            continue;
        pthread_mutex_init(&d->lock, NULL);
        if (__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == BUSY)
            __atomic_store_n(&d->state, UNINIT, __ATOMIC_RELEASE);
    }
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

static int by_addr(const void *a, const void *b)
{
    const struct revmap_entry *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static void build_revmap(struct vgpu_dispatch *d)
{
    struct vgpu_revmap *m = malloc(sizeof(*m) + d->count * sizeof(m->e[0]));
    if (!m)
        return;
    m->n = 0;
    for (unsigned i = 0; i < d->count; i++) {
        if (d->real[i] == (void *)d->spec->missing_fn)
            continue;
        m->e[m->n].addr = (uintptr_t)d->real[i];
        m->e[m->n].slot = i;
        m->n++;
    }
    qsort(m->e, m->n, sizeof(m->e[0]), by_addr);
    d->revmap = m;
}

static void resolve(struct vgpu_dispatch *d)
{
    struct vgpu_found found = { 0 };
    char looked[4096];

    if (d->remote && vgpu_remote_wanted() && vgpu_remote_allowed()) {
        /* A remote GPU: the executor's driver, through the socket; no
         * driver of this machine is looked for, or loaded. */
        for (unsigned i = 0; i < d->count; i++)
            d->real[i] = d->remote[i];
        d->handle = (void *)d->remote;
        snprintf(d->path, sizeof(d->path), "remote:%s", vgpu_remote_where());
        build_revmap(d);
        vgpu_info("forwarding to the remote %s at %s", d->spec->what, vgpu_remote_where());
    } else if (vgpu_pathfind(d->spec, &found, looked, sizeof(looked)) == 0) {
        d->handle = found.handle;
        memcpy(d->path, found.path, sizeof(d->path));
        unsigned missing = 0;
        for (unsigned i = 0; i < d->count; i++) {
            void *fn = dlsym(d->handle, d->names[i]);
            if (!fn)
                missing++;
            d->real[i] = fn ? fn : (void *)d->spec->missing_fn;
        }
        build_revmap(d);
        vgpu_info("forwarding to the %s at %s (%u of %u entry points absent there)", d->spec->what, d->path,
                  missing, d->count);
    } else {
        for (unsigned i = 0; i < d->count; i++)
            d->real[i] = (void *)d->spec->nodriver_fn;
        if (vgpu_operator_locked(vgpu_operator()))
            vgpu_error("no %s found (%s); every call fails as if no GPU were present. The operator sets the "
                       "real %s in %s (real_libcuda, real_nvml).", d->spec->what, looked, d->spec->soname,
                       VGPU_OPERATOR_CONFIG);
        else
            vgpu_error("no %s found (%s); every call fails as if no GPU were present. Set %s to the real %s.",
                       d->spec->what, looked, d->spec->override_env, d->spec->soname);
    }
    /* While tracing, trampolines keep going through the stubs, which log. */
    if (!vgpu_trace_enabled())
        for (unsigned i = 0; i < d->count; i++)
            __atomic_store_n(&d->dispatch[i], d->real[i], __ATOMIC_RELAXED);
}

bool vgpu_dispatch_init(struct vgpu_dispatch *d)
{
    /* A driver constructor calling back into vgpu while we resolve it would
     * otherwise wait for itself. */
    static __thread struct vgpu_dispatch *resolving;

    if (__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == READY)
        return d->handle != NULL;
    if (resolving == d)
        return false;
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&d->lock);
    if (__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) != READY) {
        __atomic_store_n(&d->state, BUSY, __ATOMIC_RELEASE);
        for (size_t i = 0; i < sizeof(registered) / sizeof(*registered); i++)
            if (!registered[i] || registered[i] == d) {
                registered[i] = d;
                break;
            }
        resolving = d;
        resolve(d);
        resolving = NULL;
        __atomic_store_n(&d->state, READY, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&d->lock);
    return d->handle != NULL;
}

bool vgpu_dispatch_have_driver(struct vgpu_dispatch *d)
{
    return vgpu_dispatch_init(d);
}

void *vgpu_dispatch_stub_target(struct vgpu_dispatch *d, unsigned slot)
{
    vgpu_dispatch_init(d);
    if (__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) != READY)
        return (void *)d->spec->nodriver_fn; /* re-entered during init */
    if (vgpu_trace_enabled())
        vgpu_trace_forwarded(d->names[slot]);
    return d->real[slot];
}

static int by_name(const void *key, const void *elem)
{
    return strcmp(key, *(const char *const *)elem);
}

int vgpu_dispatch_slot(const struct vgpu_dispatch *d, const char *name)
{
    const char *const *p = bsearch(name, d->names, d->count, sizeof(*d->names), by_name);
    return p ? (int)(p - d->names) : -1;
}

int vgpu_dispatch_slot_of_real(const struct vgpu_dispatch *d, const void *fn)
{
    const struct vgpu_revmap *m = d->revmap;
    if (!m || !fn)
        return -1;
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->e[mid].addr < (uintptr_t)fn)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == m->n || m->e[lo].addr != (uintptr_t)fn)
        return -1;
    /* Aliases (two exported names, one implementation): prefer a hooked one. */
    for (size_t i = lo; i < m->n && m->e[i].addr == (uintptr_t)fn; i++)
        if (d->hooks[m->e[i].slot])
            return (int)m->e[i].slot;
    return (int)m->e[lo].slot;
}

void *vgpu_dispatch_wrap(struct vgpu_dispatch *d, void *fn)
{
    vgpu_dispatch_ensure(d);
    int slot = vgpu_dispatch_slot_of_real(d, fn);
    if (slot < 0)
        return fn;
    if (d->hooks[slot])
        return (void *)d->hooks[slot];
    if (vgpu_trace_enabled())
        return d->stubs[slot];
    return fn;
}
