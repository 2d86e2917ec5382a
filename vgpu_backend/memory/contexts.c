/*
 * Context overhead: a context takes device memory that no allocation call
 * reports (the driver's per-process state, local memory, printf buffers:
 * hundreds of MiB on a large GPU).  A process's first context on a device
 * takes the most, since the driver's per-process state comes with it; each
 * further one takes its own (on an H100 about 500 MiB and 524 MiB).  The
 * vGPU counts both, so the quota bounds the device memory really in use:
 * a process with n live contexts on a device is charged first + (n - 1) x
 * further, whichever of them go first.  Each size is measured once per
 * GPU, by the first process that makes such a context there, from the
 * driver's NVML (that process's usage, less what it holds), and kept in
 * BAR0 for every later process, which then claims it before the context
 * is made: a context that does not fit is refused.  Destroying a context
 * also frees what was allocated in it, and what its limits reserved
 * (limits.c), so those are given back too.
 */
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "forwarder/real_nvml.h"
#include "vgpu_backend/backend.h"
#include "vgpu_backend/join/cuda_devices.h"
#include "vgpu_backend/join/current.h"
#include "vgpu_backend/memory/alloc_table.h"
#include "vgpu_backend/memory/quota.h"
#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_CONTEXTS 1024

/* This process's contexts; all guarded by lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int live[VGPU_MAX_DEVICES];         /* contexts per vGPU device (a retained primary counts once) */
static uint64_t charged[VGPU_MAX_DEVICES]; /* overhead bytes taken per vGPU device */
/* Retains of each device's primary context; the context itself is
 * registered in join/current.h, set and cleared (released to zero or
 * reset) under this lock. */
static int primary_refs[VGPU_MAX_CUDA_DEVICES];
static struct {
    CUcontext ctx;
    int vdev;
} contexts[MAX_CONTEXTS];
static int ncontexts;

/* The claim's token: what was taken, which size it was, whether to measure. */
enum { TOKEN_TAKEN = 1, TOKEN_MEASURE = 2, TOKEN_FURTHER = 4, TOKEN_BY_PID = 8, TOKEN_SHIFT = 4 };

static _Atomic uint64_t *size_of(struct vgpu_self *self, int vdev, bool further)
{
    struct vgpu_bar0_device_status *st = &self->bar0.bar->status.device[vdev];
    return further ? &st->context_extra : &st->context_overhead;
}

/* What n live contexts on vdev cost; the sizes not yet measured count 0. */
static uint64_t cost(struct vgpu_self *self, int vdev, int n)
{
    if (n <= 0)
        return 0;
    return atomic_load(size_of(self, vdev, false)) + (uint64_t)(n - 1) * atomic_load(size_of(self, vdev, true));
}

/* Brings vdev's charge to what its live contexts cost; called with lock held. */
static void settle_charge(struct vgpu_self *self, int vdev)
{
    uint64_t want = cost(self, vdev, live[vdev]);
    vgpu_bar0_recount(&self->bar0, vdev, charged[vdev], want); /* the driver made them already */
    charged[vdev] = want;
}

static uint64_t nvml_used(const struct vgpu_self *self, int vdev)
{
    const struct vgpu_real_nvml *nvml = vgpu_real_nvml(NULL);
    nvmlMemory_t m;
    return nvml && nvml->memory(self->dev[vdev].nvml, &m) == NVML_SUCCESS ? m.used : 0;
}

/* What the driver's NVML says this process uses on vdev; false when it
 * does not list the process (a PID namespace, or nothing used yet). */
static bool own_usage(struct vgpu_self *self, int vdev, uint64_t *used)
{
    const struct vgpu_real_nvml *nvml = vgpu_real_nvml(NULL);
    unsigned n = 0;
    nvmlProcessInfo_t *procs = nvml ? vgpu_real_nvml_processes(nvml, self->dev[vdev].nvml, &n) : NULL;
    bool found = false;
    for (unsigned i = 0; procs && i < n && !found; i++)
        if (procs[i].pid == (unsigned)getpid() && procs[i].usedGpuMemory != (unsigned long long)NVML_VALUE_NOT_AVAILABLE) {
            *used = procs[i].usedGpuMemory;
            found = true;
        }
    free(procs);
    return found;
}

/*
 * The new context's size, from the driver's NVML: the growth of this
 * process's usage across the creation (by_pid: base is its usage before),
 * or, for its first context on the GPU, its usage less what it holds in
 * BAR0 (nothing, or next to nothing, with no context yet).  Not what it
 * uses less what it holds in general: vgpu rounds allocations up to the
 * driver's unit, and the difference would be taken from the context.
 */
static uint64_t measure(struct vgpu_self *self, int vdev, uint64_t base, bool by_pid)
{
    uint64_t used;
    if (own_usage(self, vdev, &used)) {
        if (by_pid)
            return used > base ? used - base : 0;
        uint64_t held = self->bar0.slot >= 0
                            ? __atomic_load_n(&self->bar0.bar->procs[self->bar0.slot].held[vdev], __ATOMIC_RELAXED)
                            : 0;
        return used > held ? used - held : 0;
    }
    if (by_pid)
        return 0; /* listed before, not now: nothing to go by */
    /* Not listed under our pid (a PID namespace): the device's growth. */
    uint64_t after = nvml_used(self, vdev);
    return base && after > base ? after - base : 0;
}

/* Takes a context's size from the quota.  A quota that could never hold
 * the context is a configuration to fix, not a moment's shortage: said as an
 * error, with the smallest quota that works. */
static bool take(struct vgpu_self *self, int vdev, uint64_t size, bool further)
{
    if (vgpu_quota_take(self, vdev, size, further ? "further context" : "context"))
        return true;
    uint64_t limit = vgpu_self_total(self, vdev);
    if (!further && size > limit) {
        char want[32], total[32];
        vgpu_error("vGPU %s device %d: its memory quota of %s is smaller than one CUDA context on this GPU, which "
                   "takes %s (measured): no CUDA program can run in it; give the vGPU at least %s plus what its "
                   "programs allocate (%s)",
                   self->bar0.path, vdev, vgpu_format_size(limit, total, sizeof(total)),
                   vgpu_format_size(size, want, sizeof(want)), want,
                   self->source == VGPU_SOURCE_STANDALONE ? "VGPU_MEMORY_LIMIT" : "the vGPU's memory = in the mediator's config");
    }
    return false;
}

CUresult vgpu_backend_ctx_claim(CUdevice dev, bool primary, uint64_t *token)
{
    *token = 0;
    struct vgpu_self *self = vgpu_self_on();
    int vdev = self ? vgpu_cuda_vgpu_index(dev) : -1;
    if (vdev < 0)
        return CUDA_SUCCESS;
    if (!vgpu_self_check(self))
        return CUDA_ERROR_OUT_OF_MEMORY; /* refused: said once, when it happened */
    pthread_mutex_lock(&lock);
    bool retain = primary && dev < VGPU_MAX_CUDA_DEVICES && primary_refs[dev] > 0;
    bool further = live[vdev] > 0;
    pthread_mutex_unlock(&lock);
    if (retain)
        return CUDA_SUCCESS; /* the primary context is there already */
    uint64_t size = atomic_load(size_of(self, vdev, further));
    uint64_t kind = further ? TOKEN_FURTHER : 0;
    if (!size) {
        /* Measured after creation, from this process's usage now, or the
         * device's where the driver does not list the process. */
        uint64_t mine;
        *token = own_usage(self, vdev, &mine) ? mine << TOKEN_SHIFT | TOKEN_MEASURE | TOKEN_BY_PID | kind
                                              : nvml_used(self, vdev) << TOKEN_SHIFT | TOKEN_MEASURE | kind;
        return CUDA_SUCCESS;
    }
    if (!take(self, vdev, size, further))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *token = size << TOKEN_SHIFT | TOKEN_TAKEN | kind;
    return CUDA_SUCCESS;
}

CUresult vgpu_backend_ctx_settle(CUdevice dev, bool primary, CUresult r, CUcontext ctx, uint64_t token)
{
    struct vgpu_self *self = vgpu_self_on();
    int vdev = self ? vgpu_cuda_vgpu_index(dev) : -1;
    if (vdev < 0)
        return r;
    uint64_t taken = token & TOKEN_TAKEN ? token >> TOKEN_SHIFT : 0;
    if (r != CUDA_SUCCESS) {
        vgpu_bar0_give(&self->bar0, vdev, taken);
        return r;
    }
    if (token & TOKEN_MEASURE) {
        bool further = token & TOKEN_FURTHER;
        uint64_t m = measure(self, vdev, token >> TOKEN_SHIFT, token & TOKEN_BY_PID), zero = 0;
        if (m && atomic_compare_exchange_strong(size_of(self, vdev, further), &zero, m)) {
            char size[32];
            vgpu_info("a %scontext on vGPU device %d takes %s (measured)", further ? "further " : "", vdev,
                      vgpu_format_size(m, size, sizeof(size)));
        }
        uint64_t size = atomic_load(size_of(self, vdev, further));
        if (!size)
            vgpu_warn("vGPU device %d: a context's memory could not be measured (no NVML usage); the quota "
                      "counts allocations only", vdev);
        /* Measured only once made: a context that does not fit is refused
         * now, as a later process's is before it is made (the caller
         * destroys it), so that the vGPU never holds more than its quota. */
        else if (!take(self, vdev, size, further))
            return CUDA_ERROR_OUT_OF_MEMORY;
        else
            taken = size;
    }
    pthread_mutex_lock(&lock);
    bool is_new = true;
    if (primary && dev < VGPU_MAX_CUDA_DEVICES) {
        is_new = primary_refs[dev]++ == 0;
        vgpu_primary_set(dev, ctx);
    } else if (ncontexts < MAX_CONTEXTS) {
        contexts[ncontexts].ctx = ctx;
        contexts[ncontexts++].vdev = vdev;
    }
    live[vdev] += is_new;
    charged[vdev] += taken;
    settle_charge(self, vdev);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

static void give_back(const struct vgpu_alloc *a, void *arg)
{
    vgpu_bar0_give(&((struct vgpu_self *)arg)->bar0, a->dev, a->bytes);
}

/* A context of vdev is gone, with what was allocated in it and what its
 * limits reserved; called with lock held. */
static void gone(struct vgpu_self *self, int vdev, CUcontext ctx)
{
    vgpu_alloc_drop_context(ctx, give_back, self);
    vgpu_limits_context_gone(self, ctx);
    live[vdev]--;
    settle_charge(self, vdev);
}

void vgpu_backend_ctx_destroyed(CUcontext ctx)
{
    struct vgpu_self *self = vgpu_self_on();
    if (!self || !ctx)
        return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ncontexts; i++)
        if (contexts[i].ctx == ctx) {
            int vdev = contexts[i].vdev;
            contexts[i] = contexts[--ncontexts];
            gone(self, vdev, ctx);
            break;
        }
    pthread_mutex_unlock(&lock);
}

void vgpu_backend_primary_released(CUdevice dev, bool reset)
{
    struct vgpu_self *self = vgpu_self_on();
    int vdev = self ? vgpu_cuda_vgpu_index(dev) : -1;
    if (vdev < 0 || dev >= VGPU_MAX_CUDA_DEVICES)
        return;
    pthread_mutex_lock(&lock);
    if (primary_refs[dev] > 0 && (reset || --primary_refs[dev] == 0)) {
        primary_refs[dev] = 0;
        gone(self, vdev, vgpu_primary_set(dev, NULL));
    }
    pthread_mutex_unlock(&lock);
}
