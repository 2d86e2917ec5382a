/*
 * Streams, events, stream capture and graphs of the fake libcuda, on the
 * device timeline of gpu/timeline.c.
 *
 * A device runs this process's work in submission order, across its streams
 * (for compute-bound kernels a real device's throughput is the same as if
 * they overlapped), so a stream is, per device, the sequence number of the
 * latest operation queued on it: it is done when the device's queue has
 * passed that point.  The legacy stream (NULL, CU_STREAM_LEGACY) waits for
 * every stream, as the driver's does: synchronising it waits for the whole
 * queue.  The per-thread default stream (CU_STREAM_PER_THREAD, or NULL in a
 * _ptsz call) is each thread's own.
 *
 * Stream capture records the kernels launched on a capturing stream (not
 * run) into a graph; a graph launch queues them again, or, for a graph with
 * none (made by cuGraphCreate), one kernel of FAKEGPU_KERNEL_NS.
 */
#define _GNU_SOURCE
#include "fake_cuda.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_MAGIC 0x4d525453u /* "STRM" */
#define EVENT_MAGIC 0x544e5645u  /* "EVNT" */
#define GRAPH_MAGIC 0x48505247u  /* "GRPH" */
#define GEXEC_MAGIC 0x43584547u  /* "GEXC" */

/* Marks a handle object dead; 0 if it was not a live object of that kind.
 * Objects are never freed, so a stale handle is reported, not read after free. */
static int kill_object(unsigned *magic, int *alive, unsigned want)
{
    return magic && *magic == want && __atomic_exchange_n(alive, 0, __ATOMIC_ACQ_REL);
}

static int object_live(const unsigned *magic, int *alive, unsigned want)
{
    return magic && *magic == want && __atomic_load_n(alive, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------------------ */
/* Graphs: the kernels stream capture recorded                              */

struct kernel_list {
    struct fake_op *ops;
    size_t count, cap;
};

/* A node added by cuGraphAdd*Node (captured kernels are not nodes here). */
struct CUgraphNode_st {
    unsigned magic;
    CUgraphNodeType type;
    int dev;            /* a memory node's device */
    size_t bytes;       /* an allocation node's size */
    CUdeviceptr dptr;
};

struct CUgraph_st {
    unsigned magic;
    int alive;
    struct kernel_list kernels;
    struct CUgraphNode_st **nodes;
    size_t nnodes;
};

struct CUgraphExec_st {
    unsigned magic;
    int alive;
    struct kernel_list kernels; /* copied at instantiation */
    unsigned long long alloc_bytes[FAKEGPU_MAX_DEVICES]; /* its allocation nodes, per device */
};

static int kernels_append(struct kernel_list *l, const struct fake_op *op)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        struct fake_op *ops = realloc(l->ops, cap * sizeof *ops);
        if (!ops)
            return -1;
        l->ops = ops;
        l->cap = cap;
    }
    l->ops[l->count++] = *op;
    return 0;
}

static struct CUgraph_st *graph_new(void)
{
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (g) {
        g->magic = GRAPH_MAGIC;
        g->alive = 1;
    }
    return g;
}

/* ------------------------------------------------------------------------ */
/* Streams                                                                  */

enum stream_kind { STREAM_CREATED, STREAM_LEGACY, STREAM_PER_THREAD };

struct CUstream_st {
    unsigned magic;
    int alive;
    enum stream_kind kind;
    int device; /* a created stream's; the default streams use the current context's */
    unsigned flags;
    int priority;
    unsigned long long last[FAKEGPU_MAX_DEVICES]; /* latest operation on each device (atomic) */
    /* Stream capture.  As with the driver, a capture belongs to the thread
     * that began it; racing it with other uses of the stream is undefined. */
    CUstreamCaptureStatus capture;
    unsigned long long capture_id;
    struct CUgraph_st *graph; /* being captured */
};

/* The process's legacy stream, and each thread's per-thread default stream. */
static struct CUstream_st g_legacy = { .magic = STREAM_MAGIC, .alive = 1, .kind = STREAM_LEGACY, .device = -1 };
static __thread struct CUstream_st tl_per_thread = {
    .magic = STREAM_MAGIC, .alive = 1, .kind = STREAM_PER_THREAD, .device = -1
};
static unsigned long long g_capture_ids; /* atomic: the last capture id handed out */

/* Captures under way, for the driver's rule on the calls that may break one
 * (cuThreadExchangeStreamCaptureMode): a thread in the global mode may not
 * query or synchronise while a global capture of another thread is under
 * way, nor any thread while its own non-relaxed capture is; such a call
 * fails and invalidates those captures.  Guarded by g_captures_lock. */
#define MAX_CAPTURES 64
static struct {
    struct CUstream_st *st;
    CUstreamCaptureMode mode;
    pthread_t thread;
} g_captures[MAX_CAPTURES];
static pthread_mutex_t g_captures_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread CUstreamCaptureMode tl_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* The stream a handle means, or NULL for a dead or foreign one. */
static struct CUstream_st *stream_of(CUstream s, int ptsz)
{
    if (!s)
        return ptsz ? &tl_per_thread : &g_legacy;
    if (s == CU_STREAM_LEGACY)
        return &g_legacy;
    if (s == CU_STREAM_PER_THREAD)
        return &tl_per_thread;
    return object_live(&s->magic, &s->alive, STREAM_MAGIC) ? s : NULL;
}

static int stream_dev(const struct CUstream_st *st)
{
    return st->device >= 0 ? st->device : fake_current_device();
}

/* The operation after which everything st queued on dev is done. */
static unsigned long long stream_target(struct CUstream_st *st, int dev)
{
    return st->kind == STREAM_LEGACY ? fake_timeline_latest(dev)
                                     : __atomic_load_n(&st->last[dev], __ATOMIC_ACQUIRE);
}

static int capturing(const struct CUstream_st *st)
{
    return st->capture != CU_STREAM_CAPTURE_STATUS_NONE;
}

static void captures_add(struct CUstream_st *st, CUstreamCaptureMode mode)
{
    pthread_mutex_lock(&g_captures_lock);
    for (int i = 0; i < MAX_CAPTURES; i++)
        if (!g_captures[i].st) {
            g_captures[i].st = st;
            g_captures[i].mode = mode;
            g_captures[i].thread = pthread_self();
            break;
        }
    pthread_mutex_unlock(&g_captures_lock);
}

static void captures_remove(struct CUstream_st *st)
{
    pthread_mutex_lock(&g_captures_lock);
    for (int i = 0; i < MAX_CAPTURES; i++)
        if (g_captures[i].st == st)
            g_captures[i].st = NULL;
    pthread_mutex_unlock(&g_captures_lock);
}

CUresult fake_capture_unsafe_call(void)
{
    if (tl_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_SUCCESS;
    int broke = 0;
    pthread_t me = pthread_self();
    pthread_mutex_lock(&g_captures_lock);
    for (int i = 0; i < MAX_CAPTURES; i++) {
        struct CUstream_st *st = g_captures[i].st;
        if (!st)
            continue;
        int mine = pthread_equal(g_captures[i].thread, me);
        if ((mine && g_captures[i].mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
            (!mine && tl_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
             g_captures[i].mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            __atomic_store_n(&st->capture, CU_STREAM_CAPTURE_STATUS_INVALIDATED, __ATOMIC_RELEASE);
            broke = 1;
        }
    }
    pthread_mutex_unlock(&g_captures_lock);
    return broke ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    ENTER();
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode was = tl_capture_mode;
    tl_capture_mode = *mode;
    *mode = was;
    return CUDA_SUCCESS;
}

/* What a capture cannot hold ends it, as the driver's does. */
static CUresult refuse_in_capture(struct CUstream_st *st)
{
    st->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

static CUresult capture_kernel(struct CUstream_st *st, const struct fake_op *op)
{
    if (st->capture != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return kernels_append(&st->graph->kernels, op) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult submit(struct CUstream_st *st, int dev, const struct fake_op *op, unsigned long long *seq)
{
    return fake_timeline_submit(dev, fake_physical_device(dev), op, &st->last[dev], seq);
}

CUresult fake_stream_launch(CUstream s, int ptsz, const struct fake_op *op)
{
    unsigned long long called = fake_now_ns();
    struct CUstream_st *st = stream_of(s, ptsz);
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (capturing(st))
        return capture_kernel(st, op);
    int dev = stream_dev(st);
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUresult rc = submit(st, dev, op, NULL);
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
    struct CUstream_st *st = stream_of(s, ptsz);
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (capturing(st))
        return refuse_in_capture(st);
    *dev = stream_dev(st);
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
    struct CUstream_st *st = stream_of(s, 0);
    return st ? stream_dev(st) : fake_current_device();
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

/* Work queued on it still runs, as with the driver. */
static CUresult stream_destroy(CUstream s)
{
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    return kill_object(&s->magic, &s->alive, STREAM_MAGIC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
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

/* ------------------------------------------------------------------------ */
/* Events: markers on the device timeline                                   */

struct CUevent_st {
    unsigned magic;
    int alive;
    unsigned flags;
    /* Under g_events. */
    int dev;                /* the device of its latest record; -1: never recorded */
    unsigned long long seq; /* its marker's operation there */
    unsigned long long gen; /* records so far: only the latest marker stamps it */
    int reached;            /* the device reached the latest marker ... */
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

static int event_live(CUevent e)
{
    return e && object_live(&e->magic, &e->alive, EVENT_MAGIC);
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
    if (!phEvent || (Flags & ~known) ||
        ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_once(&g_events_once, events_init);
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
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
    struct CUstream_st *st = stream_of(s, ptsz);
    if (!event_live(e) || !st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (capturing(st)) /* accepted, not modelled */
        return st->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE ? CUDA_SUCCESS
                                                               : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    int dev = stream_dev(st);
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&g_events);
    unsigned long long gen = ++e->gen;
    e->dev = dev;
    e->reached = 0;
    pthread_mutex_unlock(&g_events);
    struct fake_op marker = { .mark = event_reached, .what = e, .gen = gen };
    unsigned long long seq;
    CUresult rc = submit(st, dev, &marker, &seq);
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
WITH_PTSZ(cuEventRecordWithFlags, event_record, (CUevent hEvent, CUstream hStream, unsigned int flags),
          hEvent, hStream, flags)

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
    if (!event_live(hStart) || !event_live(hEnd) ||
        ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING))
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

TWO_NAMES(cuEventElapsedTime_v2, cuEventElapsedTime, elapsed_time,
          (float *pMilliseconds, CUevent hStart, CUevent hEnd), pMilliseconds, hStart, hEnd)

static CUresult event_destroy(CUevent e)
{
    /* A marker still queued stamps the dead object, which is never freed. */
    return e && kill_object(&e->magic, &e->alive, EVENT_MAGIC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

TWO_NAMES(cuEventDestroy_v2, cuEventDestroy, event_destroy, (CUevent hEvent), hEvent)

/* Same device: the queue runs in submission order, so the event's marker is
 * passed before anything queued after this call.  Another device: the fake
 * makes the host wait for the event instead. */
static CUresult stream_wait_event(int ptsz, CUstream s, CUevent e, unsigned int flags)
{
    (void)flags;
    struct CUstream_st *st = stream_of(s, ptsz);
    if (!st || !event_live(e))
        return CUDA_ERROR_INVALID_HANDLE;
    if (capturing(st))
        return CUDA_SUCCESS;
    struct CUevent_st state = event_state(e);
    if (state.dev >= 0 && state.dev != stream_dev(st))
        fake_timeline_wait(state.dev, state.seq);
    return CUDA_SUCCESS;
}

WITH_PTSZ(cuStreamWaitEvent, stream_wait_event, (CUstream hStream, CUevent hEvent, unsigned int Flags),
          hStream, hEvent, Flags)

/* ------------------------------------------------------------------------ */
/* Stream capture                                                           */

static CUresult begin_capture(int ptsz, CUstream s, CUstreamCaptureMode mode)
{
    struct CUstream_st *st = stream_of(s, ptsz);
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (st->kind == STREAM_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (capturing(st))
        return CUDA_ERROR_ILLEGAL_STATE;
    struct CUgraph_st *g = graph_new();
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    st->graph = g;
    st->capture_id = __atomic_add_fetch(&g_capture_ids, 1, __ATOMIC_RELAXED);
    st->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    captures_add(st, mode);
    return CUDA_SUCCESS;
}

static CUresult begin_capture_global(int ptsz, CUstream s)
{
    return begin_capture(ptsz, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

WITH_PTSZ(cuStreamBeginCapture, begin_capture_global, (CUstream hStream), hStream)
WITH_PTSZ(cuStreamBeginCapture_v2, begin_capture, (CUstream hStream, CUstreamCaptureMode mode), hStream, mode)

/* The stream of a call that answers through out. */
static CUresult answering_stream(int ptsz, CUstream s, const void *out, struct CUstream_st **st)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    *st = stream_of(s, ptsz);
    return *st ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult end_capture(int ptsz, CUstream s, CUgraph *phGraph)
{
    struct CUstream_st *st;
    CUresult rc = answering_stream(ptsz, s, phGraph, &st);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!capturing(st))
        return CUDA_ERROR_ILLEGAL_STATE;
    struct CUgraph_st *g = st->graph;
    captures_remove(st);
    CUstreamCaptureStatus status = __atomic_load_n(&st->capture, __ATOMIC_ACQUIRE);
    st->capture = CU_STREAM_CAPTURE_STATUS_NONE;
    st->graph = NULL;
    if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
        kill_object(&g->magic, &g->alive, GRAPH_MAGIC);
        *phGraph = NULL;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *phGraph = g;
    return CUDA_SUCCESS;
}

WITH_PTSZ(cuStreamEndCapture, end_capture, (CUstream hStream, CUgraph *phGraph), hStream, phGraph)

static CUresult is_capturing(int ptsz, CUstream s, CUstreamCaptureStatus *status)
{
    struct CUstream_st *st;
    CUresult rc = answering_stream(ptsz, s, status, &st);
    if (rc == CUDA_SUCCESS)
        *status = st->capture;
    return rc;
}

WITH_PTSZ(cuStreamIsCapturing, is_capturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus),
          hStream, captureStatus)

/* The graph being captured has no dependency edges the fake models. */
static CUresult capture_info(int ptsz, CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
                             CUgraph *graph, const CUgraphNode **deps, const CUgraphEdgeData **edges,
                             size_t *ndeps)
{
    CUresult rc = is_capturing(ptsz, s, status);
    if (rc != CUDA_SUCCESS || *status == CU_STREAM_CAPTURE_STATUS_NONE)
        return rc;
    struct CUstream_st *st = stream_of(s, ptsz);
    if (id)
        *id = st->capture_id;
    if (graph)
        *graph = st->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE ? st->graph : NULL;
    if (deps)
        *deps = NULL;
    if (edges)
        *edges = NULL;
    if (ndeps)
        *ndeps = 0;
    return CUDA_SUCCESS;
}

static CUresult capture_info_v1(int ptsz, CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id)
{
    return capture_info(ptsz, s, status, id, NULL, NULL, NULL, NULL);
}

static CUresult capture_info_v2(int ptsz, CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
                                CUgraph *graph, const CUgraphNode **deps, size_t *ndeps)
{
    return capture_info(ptsz, s, status, id, graph, deps, NULL, ndeps);
}

WITH_PTSZ(cuStreamGetCaptureInfo, capture_info_v1,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out), hStream,
          captureStatus_out, id_out)
WITH_PTSZ(cuStreamGetCaptureInfo_v2, capture_info_v2,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
           const CUgraphNode **dependencies_out, size_t *numDependencies_out),
          hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out)
WITH_PTSZ(cuStreamGetCaptureInfo_v3, capture_info,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
           const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out,
           size_t *numDependencies_out),
          hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out)

/* ------------------------------------------------------------------------ */
/* Graphs                                                                   */

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    ENTER();
    if (!phGraph || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = graph_new();
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = g;
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
    ENTER();
    return hGraph && kill_object(&hGraph->magic, &hGraph->alive, GRAPH_MAGIC) ? CUDA_SUCCESS
                                                                              : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult instantiate(CUgraphExec *phGraphExec, CUgraph hGraph)
{
    if (!phGraphExec)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hGraph || !object_live(&hGraph->magic, &hGraph->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < hGraph->kernels.count; i++)
        if (kernels_append(&x->kernels, &hGraph->kernels.ops[i]) != 0) {
            free(x->kernels.ops);
            free(x);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    for (size_t i = 0; i < hGraph->nnodes; i++)
        if (hGraph->nodes[i]->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
            x->alloc_bytes[hGraph->nodes[i]->dev] += hGraph->nodes[i]->bytes;
    x->magic = GEXEC_MAGIC;
    x->alive = 1;
    *phGraphExec = x;
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    ENTER();
    (void)flags;
    return instantiate(phGraphExec, hGraph);
}

/* The CUDA 10 and 11 forms, with an error node and a log the fake never fills. */
static CUresult instantiate_logged(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                   char *logBuffer, size_t bufferSize)
{
    (void)phErrorNode, (void)logBuffer, (void)bufferSize;
    return instantiate(phGraphExec, hGraph);
}

TWO_NAMES(cuGraphInstantiate_v2, cuGraphInstantiate, instantiate_logged,
          (CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize),
          phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize)

static CUresult instantiate_with_params(int ptsz, CUgraphExec *phGraphExec, CUgraph hGraph,
                                        CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    (void)ptsz;
    if (!params)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = instantiate(phGraphExec, hGraph);
    params->hErrNode_out = NULL;
    params->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return rc;
}

WITH_PTSZ(cuGraphInstantiateWithParams, instantiate_with_params,
          (CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
          phGraphExec, hGraph, instantiateParams)

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    ENTER();
    return hGraphExec && kill_object(&hGraphExec->magic, &hGraphExec->alive, GEXEC_MAGIC)
               ? CUDA_SUCCESS
               : CUDA_ERROR_INVALID_HANDLE;
}

int fake_graph_mem_reserve(int dev, unsigned long long bytes);

/* One launch call (one launch cost) queues every kernel of the graph; a
 * graph with none takes one kernel's time. */
static CUresult graph_launch(int ptsz, CUgraphExec x, CUstream s)
{
    unsigned long long called = fake_now_ns();
    struct CUstream_st *st = stream_of(s, ptsz);
    if (!x || !object_live(&x->magic, &x->alive, GEXEC_MAGIC) || !st)
        return CUDA_ERROR_INVALID_HANDLE;
    const struct fake_op empty = { .ns = fakegpu_config()->kernel_ns };
    const struct fake_op *ops = x->kernels.count ? x->kernels.ops : &empty;
    size_t count = x->kernels.count ? x->kernels.count : 1;
    int dev = capturing(st) ? 0 : stream_dev(st);
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!capturing(st))
        for (int d = 0; d < FAKEGPU_MAX_DEVICES; d++)
            if (x->alloc_bytes[d] && fake_graph_mem_reserve(d, x->alloc_bytes[d]) != 0)
                return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CUDA_SUCCESS;
    for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++)
        rc = capturing(st) ? capture_kernel(st, &ops[i]) : submit(st, dev, &ops[i], NULL);
    if (capturing(st))
        return rc;
    if (rc == CUDA_SUCCESS)
        fake_count_launch();
    fake_launch_cost(called);
    return rc;
}

WITH_PTSZ(cuGraphLaunch, graph_launch, (CUgraphExec hGraphExec, CUstream hStream), hGraphExec, hStream)

/* ------------------------------------------------------------------------ */
/* Graph memory: allocation nodes, and the device's reserve behind them     */

#define GNODE_MAGIC 0x444e4747u /* "GGND" */

/* Per device, the memory graphs' allocation nodes reserve: grown at a
 * launch to what its graph allocates (graphs reuse it, as the driver's
 * graph pool does), given back by cuDeviceGraphMemTrim.  The fake frees
 * every allocation at the end of its graph, so none is in use between
 * launches.  Guarded by graph_mem_lock. */
static unsigned long long graph_reserve[FAKEGPU_MAX_DEVICES], graph_high[FAKEGPU_MAX_DEVICES];
static pthread_mutex_t graph_mem_lock = PTHREAD_MUTEX_INITIALIZER;

int fake_graph_mem_reserve(int dev, unsigned long long bytes)
{
    int rc = 0;
    pthread_mutex_lock(&graph_mem_lock);
    if (bytes > graph_reserve[dev]) {
        rc = fakegpu_state_charge(dev, bytes - graph_reserve[dev]);
        if (rc == 0)
            graph_reserve[dev] = bytes;
    }
    if (graph_reserve[dev] > graph_high[dev])
        graph_high[dev] = graph_reserve[dev];
    pthread_mutex_unlock(&graph_mem_lock);
    return rc;
}

static CUresult add_node(CUgraph g, CUgraphNode *out, struct CUgraphNode_st *n)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!g || !object_live(&g->magic, &g->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUgraphNode_st **nodes = realloc(g->nodes, (g->nnodes + 1) * sizeof *nodes);
    struct CUgraphNode_st *node = malloc(sizeof *node);
    if (!nodes || !node) {
        free(node);
        if (nodes)
            g->nodes = nodes;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *node = *n;
    node->magic = GNODE_MAGIC;
    g->nodes = nodes;
    g->nodes[g->nnodes++] = node;
    *out = node;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    ENTER();
    (void)dependencies, (void)numDependencies;
    if (!nodeParams || nodeParams->bytesize == 0 || nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = nodeParams->poolProps.location.id;
    if (dev < 0 || dev >= fakegpu_config()->devices)
        return CUDA_ERROR_INVALID_DEVICE;
    /* An address of its own, as the driver gives one at creation. */
    static _Atomic unsigned long long next = 0x7f0000000000ull;
    nodeParams->dptr = (CUdeviceptr)atomic_fetch_add(&next, (nodeParams->bytesize + 0xfffff) & ~0xfffffull);
    struct CUgraphNode_st n = { .type = CU_GRAPH_NODE_TYPE_MEM_ALLOC, .dev = dev, .bytes = nodeParams->bytesize,
                                .dptr = nodeParams->dptr };
    return add_node(hGraph, phGraphNode, &n);
}

CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                               size_t numDependencies, CUdeviceptr dptr)
{
    ENTER();
    (void)dependencies, (void)numDependencies;
    struct CUgraphNode_st n = { .type = CU_GRAPH_NODE_TYPE_MEM_FREE, .dptr = dptr };
    return add_node(hGraph, phGraphNode, &n);
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    ENTER();
    if (!numNodes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hGraph || !object_live(&hGraph->magic, &hGraph->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    if (nodes)
        for (size_t i = 0; i < *numNodes && i < hGraph->nnodes; i++)
            nodes[i] = hGraph->nodes[i];
    *numNodes = hGraph->nnodes;
    return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    ENTER();
    if (!hNode || hNode->magic != GNODE_MAGIC || !type)
        return CUDA_ERROR_INVALID_VALUE;
    *type = hNode->type;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    ENTER();
    if (!hNode || hNode->magic != GNODE_MAGIC || hNode->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC || !params_out)
        return CUDA_ERROR_INVALID_VALUE;
    memset(params_out, 0, sizeof *params_out);
    params_out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params_out->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params_out->poolProps.location.id = hNode->dev;
    params_out->bytesize = hNode->bytes;
    params_out->dptr = hNode->dptr;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    ENTER();
    if (device < 0 || device >= fakegpu_config()->devices)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&graph_mem_lock);
    cuuint64_t v = attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT ? graph_reserve[device]
                   : attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH  ? graph_high[device]
                                                                  : 0; /* nothing in use between launches */
    pthread_mutex_unlock(&graph_mem_lock);
    *(cuuint64_t *)value = v;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    ENTER();
    if (device < 0 || device >= fakegpu_config()->devices)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&graph_mem_lock);
    fakegpu_state_uncharge(device, graph_reserve[device]);
    graph_reserve[device] = 0;
    pthread_mutex_unlock(&graph_mem_lock);
    return CUDA_SUCCESS;
}
