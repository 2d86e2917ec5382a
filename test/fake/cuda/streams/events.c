/*
 * Events: markers on the device timeline, reached when the work queued
 * before them is done, at the device time their stream got there.  An
 * event is its context's, as the driver's are: recorded on a stream of
 * another device it is refused, and it ends with its context (destroyed,
 * or a primary context reset), whatever the handle's context became.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <pthread.h>
#include <stdlib.h>

#define EVENT_MAGIC 0x544e5645u /* "EVNT" */

struct CUevent_st {
    unsigned magic;
    int alive;
    unsigned flags;
    CUcontext ctx;               /* its context, current at its creation ... */
    unsigned long long ctx_id;   /* ... while it has this id */
    /* Under g_events. */
    int dev;                  /* the device of its latest record; -1: never recorded */
    unsigned long long seq;   /* its marker's operation there */
    unsigned long long gen;   /* records so far: only the latest marker stamps it */
    int reached;              /* the device reached the latest marker ... */
    unsigned long long at_ns; /* ... at this device time */
};

/* Owned by this file: guards the record state of every event.  A forked
 * child gets it back unlocked (the thread that held it is not there). */
static pthread_mutex_t g_events = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_events_once = PTHREAD_ONCE_INIT;

static void events_after_fork_child(void)
{
    pthread_mutex_init(&g_events, NULL);
}

static void events_init(void)
{
    pthread_atfork(NULL, NULL, events_after_fork_child);
}

/* Live, and its context too. */
static int event_live(CUevent e)
{
    return e && fake_object_live(&e->magic, &e->alive, EVENT_MAGIC) && fake_ctx_valid(e->ctx) &&
           e->ctx->id == e->ctx_id;
}

/* A snapshot of an event's record state. */
static struct CUevent_st event_state(CUevent e)
{
    pthread_mutex_lock(&g_events);
    struct CUevent_st copy = *e;
    pthread_mutex_unlock(&g_events);
    return copy;
}

/* The executor reached a marker (fake_op.mark). */
static void event_reached(void *what, unsigned long long gen, unsigned long long at_ns)
{
    struct CUevent_st *e = what;
    pthread_mutex_lock(&g_events);
    if (e->gen == gen) {
        e->reached = 1;
        e->at_ns = at_ns;
    }
    pthread_mutex_unlock(&g_events);
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    ENTER();
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (Flags & ~known) || ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx = fake_current_ctx();
    if (fake_current_device() < 0 || !fake_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_once(&g_events_once, events_init);
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->ctx = ctx;
    e->ctx_id = ctx->id;
    e->magic = EVENT_MAGIC;
    e->alive = 1;
    e->flags = Flags;
    e->dev = -1;
    *phEvent = e;
    return CUDA_SUCCESS;
}

/* A marker on the stream: reached when what the stream queued before it is
 * done (or at once when nothing is queued). */
static CUresult event_record(int ptsz, CUevent e, CUstream s, unsigned int flags)
{
    (void)flags; /* CU_EVENT_RECORD_EXTERNAL only matters inside a capture */
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    if (!event_live(e) || !st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_capturing(st)) /* accepted, not modelled */
        return st->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    int dev = fake_stream_dev(st);
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (dev != e->ctx->device) /* an event and a stream of two contexts */
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_events);
    unsigned long long gen = ++e->gen;
    e->dev = dev;
    e->reached = 0;
    pthread_mutex_unlock(&g_events);
    struct fake_op marker = { .mark = event_reached, .what = e, .gen = gen };
    unsigned long long seq;
    CUresult rc = fake_submit(st, dev, &marker, &seq);
    pthread_mutex_lock(&g_events);
    if (rc == CUDA_SUCCESS && e->gen == gen)
        e->seq = seq;
    pthread_mutex_unlock(&g_events);
    return rc;
}

static CUresult event_record_default(int ptsz, CUevent e, CUstream s)
{
    return event_record(ptsz, e, s, 0);
}

WITH_PTSZ(cuEventRecord, event_record_default, (CUevent hEvent, CUstream hStream), hEvent, hStream)
WITH_PTSZ(cuEventRecordWithFlags, event_record, (CUevent hEvent, CUstream hStream, unsigned int flags), hEvent, hStream,
          flags)

CUresult cuEventQuery(CUevent hEvent)
{
    ENTER();
    if (!event_live(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult rc = fake_capture_unsafe_call();
    if (rc != CUDA_SUCCESS)
        return rc;
    struct CUevent_st e = event_state(hEvent);
    return e.dev < 0 || fake_timeline_done(e.dev, e.seq) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

/* CU_EVENT_BLOCKING_SYNC or not, the caller sleeps. */
CUresult cuEventSynchronize(CUevent hEvent)
{
    ENTER();
    if (!event_live(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult rc = fake_capture_unsafe_call();
    if (rc != CUDA_SUCCESS)
        return rc;
    struct CUevent_st e = event_state(hEvent);
    if (e.dev >= 0)
        fake_timeline_wait(e.dev, e.seq);
    return CUDA_SUCCESS;
}

static CUresult elapsed_time(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    if (!event_live(hStart) || !event_live(hEnd) || ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUevent_st a = event_state(hStart), b = event_state(hEnd);
    if (a.dev < 0 || b.dev < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    /* Done is what the queue says (a waiting caller nudges an executor that
     * batches); the device time is the marker's. */
    if (!fake_timeline_done(a.dev, a.seq) || !fake_timeline_done(b.dev, b.seq))
        return CUDA_ERROR_NOT_READY;
    a = event_state(hStart);
    b = event_state(hEnd);
    if (!a.reached || !b.reached)
        return CUDA_ERROR_NOT_READY;
    *pMilliseconds = (float)((double)(long long)(b.at_ns - a.at_ns) / 1e6);
    return CUDA_SUCCESS;
}

TWO_NAMES(cuEventElapsedTime_v2, cuEventElapsedTime, elapsed_time, (float *pMilliseconds, CUevent hStart, CUevent hEnd),
          pMilliseconds, hStart, hEnd)

static CUresult event_destroy(CUevent e)
{
    /* A marker still queued stamps the dead object, which is never freed. */
    return e && fake_kill_object(&e->magic, &e->alive, EVENT_MAGIC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

TWO_NAMES(cuEventDestroy_v2, cuEventDestroy, event_destroy, (CUevent hEvent), hEvent)

/* Same device: the queue runs in submission order, so the event's marker is
 * passed before anything queued after this call.  Another device: the fake
 * makes the host wait for the event instead. */
static CUresult stream_wait_event(int ptsz, CUstream s, CUevent e, unsigned int flags)
{
    (void)flags;
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    if (!st || !event_live(e))
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_capturing(st))
        return CUDA_SUCCESS;
    struct CUevent_st state = event_state(e);
    if (state.dev >= 0 && state.dev != fake_stream_dev(st))
        fake_timeline_wait(state.dev, state.seq);
    return CUDA_SUCCESS;
}

WITH_PTSZ(cuStreamWaitEvent, stream_wait_event, (CUstream hStream, CUevent hEvent, unsigned int Flags), hStream, hEvent,
          Flags)
