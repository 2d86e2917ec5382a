/*
 * Streams of the fake libcuda, on the device timeline of ../../gpu/timeline.c;
 * events (events.c) are markers on it, stream capture (capture.c) records
 * kernels into graphs (../graphs/).
 *
 * A device runs this process's work in submission order, across its streams
 * (for compute-bound kernels a real device's throughput is the same as if
 * they overlapped), so a stream is, per device, the sequence number of the
 * latest operation queued on it: it is done when the device's queue has
 * passed that point.  The legacy stream (NULL, CU_STREAM_LEGACY) waits for
 * every stream, as the driver's does: synchronising it waits for the whole
 * queue.  The per-thread default stream (CU_STREAM_PER_THREAD, or NULL in a
 * _ptsz call) is each thread's own.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdlib.h>

#define STREAM_MAGIC 0x4d525453u /* "STRM" */

/* Marks a handle object dead; 0 if it was not a live object of that kind.
 * Objects are never freed, so a stale handle is reported, not read after free. */
int fake_kill_object(unsigned *magic, int *alive, unsigned want)
{
    return magic && *magic == want && __atomic_exchange_n(alive, 0, __ATOMIC_ACQ_REL);
}

int fake_object_live(const unsigned *magic, int *alive, unsigned want)
{
    return magic && *magic == want && __atomic_load_n(alive, __ATOMIC_ACQUIRE);
}

/* The process's legacy stream, and each thread's per-thread default stream. */
static struct CUstream_st g_legacy = { .magic = STREAM_MAGIC, .alive = 1, .kind = STREAM_LEGACY, .device = -1 };
static __thread struct CUstream_st tl_per_thread = {
    .magic = STREAM_MAGIC, .alive = 1, .kind = STREAM_PER_THREAD, .device = -1
};

/* The stream a handle means, or NULL for a dead or foreign one. */
struct CUstream_st *fake_stream_of(CUstream s, int ptsz)
{
    if (!s)
        return ptsz ? &tl_per_thread : &g_legacy;
    if (s == CU_STREAM_LEGACY)
        return &g_legacy;
    if (s == CU_STREAM_PER_THREAD)
        return &tl_per_thread;
    return fake_object_live(&s->magic, &s->alive, STREAM_MAGIC) ? s : NULL;
}

int fake_stream_dev(const struct CUstream_st *st)
{
    return st->device >= 0 ? st->device : fake_current_device();
}

/* The operation after which everything st queued on dev is done. */
static unsigned long long stream_target(struct CUstream_st *st, int dev)
{
    return st->kind == STREAM_LEGACY ? fake_timeline_latest(dev) : __atomic_load_n(&st->last[dev], __ATOMIC_ACQUIRE);
}

/* What a capture cannot hold ends it, as the driver's does. */
static CUresult refuse_in_capture(struct CUstream_st *st)
{
    st->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult fake_submit(struct CUstream_st *st, int dev, const struct fake_op *op, unsigned long long *seq)
{
    return fake_timeline_submit(dev, fake_physical_device(dev), op, &st->last[dev], seq);
}

CUresult fake_stream_launch(CUstream s, int ptsz, const struct fake_op *op)
{
    unsigned long long called = fake_now_ns();
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_capturing(st))
        return fake_capture_kernel(st, op);
    int dev = fake_stream_dev(st);
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUresult rc = fake_submit(st, dev, op, NULL);
    if (rc == CUDA_SUCCESS)
        fake_count_launch();
    fake_launch_cost(called);
    return rc;
}

/* What stream s has queued, for a call that a capture cannot hold: its
 * device (-1: no context, nothing queued) and the operation after which it
 * is done. */
static CUresult stream_work(CUstream s, int ptsz, int *dev, unsigned long long *target)
{
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_capturing(st))
        return refuse_in_capture(st);
    *dev = fake_stream_dev(st);
    *target = *dev >= 0 ? stream_target(st, *dev) : 0;
    return CUDA_SUCCESS;
}

CUresult fake_stream_before_host_op(CUstream s, int ptsz)
{
    int dev;
    unsigned long long target;
    CUresult rc = stream_work(s, ptsz, &dev, &target);
    if (rc == CUDA_SUCCESS && dev >= 0)
        fake_timeline_wait(dev, target);
    return rc;
}

int fake_stream_device(CUstream s)
{
    struct CUstream_st *st = fake_stream_of(s, 0);
    return st ? fake_stream_dev(st) : fake_current_device();
}

static CUresult stream_create(CUstream *phStream, unsigned int flags, int priority)
{
    if (!phStream)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = fake_current_device();
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->magic = STREAM_MAGIC;
    s->alive = 1;
    s->kind = STREAM_CREATED;
    s->device = dev;
    s->ctx = fake_current_ctx();
    s->flags = flags;
    s->priority = priority;
    *phStream = s;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    ENTER();
    return stream_create(phStream, Flags, 0);
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    ENTER();
    return stream_create(phStream, flags, priority);
}

/* A created stream's context; a default stream's is the current one. */
CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    ENTER();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *st = fake_stream_of(hStream, 0);
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    CUcontext ctx = st->kind == STREAM_CREATED ? st->ctx : fake_current_ctx();
    if (!fake_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *pctx = ctx;
    return CUDA_SUCCESS;
}

/* Work queued on it still runs, as with the driver. */
static CUresult stream_destroy(CUstream s)
{
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    return fake_kill_object(&s->magic, &s->alive, STREAM_MAGIC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

TWO_NAMES(cuStreamDestroy_v2, cuStreamDestroy, stream_destroy, (CUstream hStream), hStream)

static CUresult stream_sync(int ptsz, CUstream s)
{
    CUresult rc = fake_capture_unsafe_call();
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = fake_stream_before_host_op(s, ptsz);
    if (rc == CUDA_SUCCESS)
        fake_trim_pools(-1);
    return rc;
}

WITH_PTSZ(cuStreamSynchronize, stream_sync, (CUstream hStream), hStream)

static CUresult stream_query(int ptsz, CUstream s)
{
    int dev;
    unsigned long long target;
    CUresult rc = fake_capture_unsafe_call();
    if (rc == CUDA_SUCCESS)
        rc = stream_work(s, ptsz, &dev, &target);
    if (rc != CUDA_SUCCESS)
        return rc;
    return dev < 0 || fake_timeline_done(dev, target) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

WITH_PTSZ(cuStreamQuery, stream_query, (CUstream hStream), hStream)
