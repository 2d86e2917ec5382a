/*
 * The dispatch table of one interposed library (libcuda or libnvidia-ml).
 *
 * Every exported name has a slot.  Unhooked names are assembly trampolines
 * that jump through dispatch[slot]; hooked names are C functions in hooks/
 * that reach the driver through real[slot].  Both tables start out pointing
 * at lazy stubs, so the first call of any entry point finds the real driver
 * (exactly once, thread-safe) and later calls cost one indirect jump.
 */
#pragma once

#include "forwarder/specs.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct vgpu_dispatch {
    /* Generated (tools/generate/gen_dispatch.py), constant. */
    const struct vgpu_driver_spec *spec;
    unsigned count;
    const char *const *names;     /* sorted; the index is the slot */
    const void *const *hooks;     /* per slot: vgpu's own function or NULL */
    void *const *stubs;           /* per slot: the lazy (and tracing) stub */
    void **dispatch;              /* per slot: where the trampoline jumps */
    void **real;                  /* per slot: the driver's function or a fallback */
    void *const *remote;          /* per slot: the remote driver's function (docs/design/remote.md); NULL: none */

    /* Runtime state, owned by forwarder/dispatch.c. */
    int state;                    /* enum in dispatch.c; atomic */
    pthread_mutex_t lock;
    void *handle;                 /* the real driver (for a remote one, its table); never closed */
    char path[4096];              /* where it was found */
    struct vgpu_revmap *revmap;   /* real function address -> slot */
};

/* The generated instances. */
extern struct vgpu_dispatch vgpu_cuda;
extern struct vgpu_dispatch vgpu_nvml;

/* Initialises d once; returns true if a real driver was found. */
bool vgpu_dispatch_init(struct vgpu_dispatch *d);

/* Fast path of vgpu_dispatch_init for hooks. */
static inline void vgpu_dispatch_ensure(struct vgpu_dispatch *d)
{
    if (__builtin_expect(__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) != 2, 0))
        vgpu_dispatch_init(d);
}

/* The real function of slot, resolving the driver first if needed. */
static inline void *vgpu_dispatch_real(struct vgpu_dispatch *d, unsigned slot)
{
    vgpu_dispatch_ensure(d);
    return d->real[slot];
}

/* Called by the lazy stubs (through <lib>_stub_target): initialise, trace,
 * and return the function to jump to. */
void *vgpu_dispatch_stub_target(struct vgpu_dispatch *d, unsigned slot);

/* The slot of an exported name, or -1. */
int vgpu_dispatch_slot(const struct vgpu_dispatch *d, const char *name);

/* The slot whose real function is fn, or -1 (d must be initialised). */
int vgpu_dispatch_slot_of_real(const struct vgpu_dispatch *d, const void *fn);

/*
 * What vgpu hands out for a real function pointer obtained from the driver
 * (cuGetProcAddress): vgpu's hook if that exact symbol is hooked, the tracing
 * stub while VGPU_TRACE is on, else fn itself.
 */
void *vgpu_dispatch_wrap(struct vgpu_dispatch *d, void *fn);

/* True once init found a driver. */
bool vgpu_dispatch_have_driver(struct vgpu_dispatch *d);

/* Typed access to a real function: VGPU_REAL_CUDA(cuMemAlloc_v2)(...). */
#define VGPU_REAL_CUDA(name) ((__typeof__(&name))vgpu_dispatch_real(&vgpu_cuda, VGPU_CUDA_SLOT_##name))
#define VGPU_REAL_NVML(name) ((__typeof__(&name))vgpu_dispatch_real(&vgpu_nvml, VGPU_NVML_SLOT_##name))
