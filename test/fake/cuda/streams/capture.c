/*
 * Stream capture: a capturing stream records the kernels launched on it
 * (not run) into a graph (../graphs/), which cuStreamEndCapture returns.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <pthread.h>

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

int fake_capturing(const struct CUstream_st *st)
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

CUresult fake_capture_kernel(struct CUstream_st *st, const struct fake_op *op)
{
    if (st->capture != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return fake_kernels_append(&st->graph->kernels, op) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* ------------------------------------------------------------------------ */
/* Stream capture                                                           */

static CUresult begin_capture(int ptsz, CUstream s, CUstreamCaptureMode mode)
{
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (st->kind == STREAM_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_capturing(st))
        return CUDA_ERROR_ILLEGAL_STATE;
    struct CUgraph_st *g = fake_graph_new();
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
    *st = fake_stream_of(s, ptsz);
    return *st ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult end_capture(int ptsz, CUstream s, CUgraph *phGraph)
{
    struct CUstream_st *st;
    CUresult rc = answering_stream(ptsz, s, phGraph, &st);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!fake_capturing(st))
        return CUDA_ERROR_ILLEGAL_STATE;
    struct CUgraph_st *g = st->graph;
    captures_remove(st);
    CUstreamCaptureStatus status = __atomic_load_n(&st->capture, __ATOMIC_ACQUIRE);
    st->capture = CU_STREAM_CAPTURE_STATUS_NONE;
    st->graph = NULL;
    if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
        fake_kill_object(&g->magic, &g->alive, GRAPH_MAGIC);
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

WITH_PTSZ(cuStreamIsCapturing, is_capturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus), hStream,
          captureStatus)

/* The graph being captured has no dependency edges the fake models. */
static CUresult capture_info(int ptsz, CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                             const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
    CUresult rc = is_capturing(ptsz, s, status);
    if (rc != CUDA_SUCCESS || *status == CU_STREAM_CAPTURE_STATUS_NONE)
        return rc;
    struct CUstream_st *st = fake_stream_of(s, ptsz);
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

static CUresult capture_info_v2(int ptsz, CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                                const CUgraphNode **deps, size_t *ndeps)
{
    return capture_info(ptsz, s, status, id, graph, deps, NULL, ndeps);
}

WITH_PTSZ(cuStreamGetCaptureInfo, capture_info_v1,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out), hStream, captureStatus_out,
          id_out)
WITH_PTSZ(cuStreamGetCaptureInfo_v2, capture_info_v2,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
           const CUgraphNode **dependencies_out, size_t *numDependencies_out),
          hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out)
WITH_PTSZ(cuStreamGetCaptureInfo_v3, capture_info,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
           const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
          hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out)
