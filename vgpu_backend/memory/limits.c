/*
 * Context limits that reserve device memory no allocation reports
 * (cuCtxSetLimit): the stack, for every thread the GPU can hold at once
 * (on an H100 a 64 KiB stack takes 16.6 GiB), the malloc heap and the
 * printf FIFO.  Each context is charged what its limits reserve beyond the
 * values it had when vgpu first saw it set one (those are part of the
 * context's measured overhead, contexts.c).  The charge is claimed before
 * the driver call, so a limit past the quota is refused as the driver
 * refuses one past the GPU (CUDA_ERROR_OUT_OF_MEMORY), and settled to the
 * values the driver really set (it rounds them).  The driver also grows
 * the stack by itself when a kernel needs more: that growth is counted
 * the next time the context sets a limit (docs/design/memory.md).
 */
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_backend/join/current.h"
#include "vgpu_backend/memory/quota.h"
#include "vgpu_cuda_slots.h"

#include <pthread.h>

#define MAX_RECORDS 1024

enum { STACK, PRINTF, HEAP, LIMITS };
static const CUlimit which[LIMITS] = { CU_LIMIT_STACK_SIZE, CU_LIMIT_PRINTF_FIFO_SIZE, CU_LIMIT_MALLOC_HEAP_SIZE };

/* This process's contexts that set a limit; guarded by lock. */
static struct record {
    CUcontext ctx;
    int vdev;
    size_t base[LIMITS];    /* the values when vgpu first saw the context set one */
    uint64_t threads;       /* threads the device holds at once: a stack each */
    uint64_t charged;       /* bytes the quota holds for its limits */
} records[MAX_RECORDS];
static int nrecords;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int index_of(CUlimit limit)
{
    for (int k = 0; k < LIMITS; k++)
        if (which[k] == limit)
            return k;
    return -1;
}

static int read_limits(size_t v[LIMITS])
{
    for (int k = 0; k < LIMITS; k++)
        if (VGPU_REAL_CUDA(cuCtxGetLimit)(&v[k], which[k]) != CUDA_SUCCESS)
            return -1;
    return 0;
}

/* What values v reserve beyond the record's base. */
static uint64_t reserve(const struct record *r, const size_t v[LIMITS])
{
    uint64_t bytes = 0;
    for (int k = 0; k < LIMITS; k++)
        if (v[k] > r->base[k])
            bytes += (uint64_t)(v[k] - r->base[k]) * (k == STACK ? r->threads : 1);
    return bytes;
}

static uint64_t threads_of(CUdevice dev)
{
    int sms = 0, per_sm = 0;
    VGPU_REAL_CUDA(cuDeviceGetAttribute)(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    VGPU_REAL_CUDA(cuDeviceGetAttribute)(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
    return (uint64_t)(sms > 0 ? sms : 0) * (uint64_t)(per_sm > 0 ? per_sm : 0);
}

/* The current context's record, made on first sight; called with lock held. */
static struct record *record_of(CUcontext ctx, CUdevice dev, int vdev)
{
    for (int i = 0; i < nrecords; i++)
        if (records[i].ctx == ctx)
            return &records[i];
    if (nrecords == MAX_RECORDS)
        return NULL;
    struct record *r = &records[nrecords];
    *r = (struct record){ .ctx = ctx, .vdev = vdev, .threads = threads_of(dev) };
    if (read_limits(r->base) != 0)
        return NULL;
    nrecords++;
    return r;
}

CUresult vgpu_backend_limit_claim(CUlimit limit, size_t value, struct vgpu_limit_claim *c)
{
    c->counted = false;
    int k = index_of(limit);
    struct vgpu_self *self = k >= 0 ? vgpu_self_on() : NULL;
    CUcontext ctx = NULL;
    CUdevice dev = 0;
    int vdev = self ? vgpu_current_vdev(&ctx, &dev) : -1;
    if (vdev < 0)
        return CUDA_SUCCESS; /* no context: the driver will say so */
    pthread_mutex_lock(&lock);
    struct record *r = record_of(ctx, dev, vdev);
    size_t want[LIMITS];
    if (!r || read_limits(want) != 0) {
        pthread_mutex_unlock(&lock);
        if (!r)
            vgpu_warn("more than %d contexts set limits; this one's are not counted", MAX_RECORDS);
        return CUDA_SUCCESS;
    }
    want[k] = k == STACK ? (value + 15) / 16 * 16 : value; /* the driver rounds a stack up to 16 bytes */
    uint64_t need = reserve(r, want), taken = need > r->charged ? need - r->charged : 0;
    pthread_mutex_unlock(&lock);
    if (taken && !vgpu_quota_take(self, vdev, taken, "context limit"))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *c = (struct vgpu_limit_claim){ .counted = true, .ctx = ctx, .vdev = vdev, .taken = taken };
    return CUDA_SUCCESS;
}

void vgpu_backend_limit_settle(struct vgpu_limit_claim *c, CUresult result)
{
    struct vgpu_self *self = vgpu_self_on();
    if (!c->counted || !self)
        return;
    pthread_mutex_lock(&lock);
    struct record *r = NULL;
    for (int i = 0; i < nrecords && !r; i++)
        if (records[i].ctx == c->ctx)
            r = &records[i];
    size_t now[LIMITS];
    if (!r || result != CUDA_SUCCESS || read_limits(now) != 0) {
        vgpu_bar0_give(&self->bar0, c->vdev, c->taken);
        pthread_mutex_unlock(&lock);
        return;
    }
    /* What the driver really set, counted exactly. */
    uint64_t held = r->charged + c->taken, want = reserve(r, now);
    vgpu_bar0_recount(&self->bar0, r->vdev, held, want);
    r->charged = want;
    pthread_mutex_unlock(&lock);
}

void vgpu_limits_context_gone(struct vgpu_self *self, CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nrecords; i++)
        if (records[i].ctx == ctx) {
            vgpu_bar0_give(&self->bar0, records[i].vdev, records[i].charged);
            records[i] = records[--nrecords];
            break;
        }
    pthread_mutex_unlock(&lock);
}
