/*
 * Stream capture's state, the guest's side (forwarder/remote/executor/cuda/capture.c is
 * the other; the messages: forwarder/remote/spec/cuda.remote).  The driver hands out arrays it
 * owns until the thread's next such call; here they are the calling
 * thread's copies of what the executor sent, kept to that call too.
 *
 * The guest counts the captures it saw begin and not end: while none is
 * open, no stream of the process is capturing (a stream joins a capture
 * only by waiting for work of one that is), and cuStreamIsCapturing is
 * answered here, NONE, as frameworks ask it around every operation.  A
 * capture ends with its cuStreamEndCapture, whether it made a graph or
 * found the capture invalidated or unjoined; an end that failed otherwise
 * (another thread's capture) leaves it open, and the executor is asked.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name
#define MAX_DEPS VGPU_OUT_cuStreamGetCaptureInfo_v3_numDependencies_out_MAX

/* The calling thread's last arrays.  Owned by the thread, and freed at
 * its exit by the key's destructor; all are on one list too (under
 * arrays_lock), so that the process's own thread's, which no destructor
 * frees, is still the process's memory when it ends. */
struct arrays {
    struct arrays *next, **prev;
    uint64_t raw[2 * MAX_DEPS]; /* the reply's nodes and edges, as they come */
    CUgraphNode nodes[MAX_DEPS];
    CUgraphEdgeData edges[MAX_DEPS];
};
static struct arrays *all_arrays;
static pthread_mutex_t arrays_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t arrays_key;
static pthread_once_t arrays_once = PTHREAD_ONCE_INIT;

static void thread_gone(void *p)
{
    struct arrays *a = p;
    pthread_mutex_lock(&arrays_lock);
    *a->prev = a->next;
    if (a->next)
        a->next->prev = a->prev;
    pthread_mutex_unlock(&arrays_lock);
    free(a);
}

/* Captures begun and not ended, in this process: atomic.  A child of
 * fork has an executor of its own, where none is open. */
static uint64_t open_captures;

static void child_after_fork(void)
{
    pthread_mutex_init(&arrays_lock, NULL);
    __atomic_store_n(&open_captures, 0, __ATOMIC_RELAXED);
}

static void make_key(void)
{
    pthread_key_create(&arrays_key, thread_gone);
    pthread_atfork(NULL, NULL, child_after_fork);
}

static struct arrays *thread_arrays(void)
{
    pthread_once(&arrays_once, make_key);
    struct arrays *a = pthread_getspecific(arrays_key);
    if (a || !(a = calloc(1, sizeof(*a))))
        return a;
    pthread_mutex_lock(&arrays_lock);
    a->next = all_arrays;
    a->prev = &all_arrays;
    if (all_arrays)
        all_arrays->prev = &a->next;
    all_arrays = a;
    pthread_mutex_unlock(&arrays_lock);
    pthread_setspecific(arrays_key, a);
    return a;
}

/* The status, the id, the graph, the count, the nodes, their edges, into
 * the calling thread's arrays. */
static CUresult capture_info(CUstream stream, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                             const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *count)
{
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    struct arrays *a = thread_arrays();
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct vgpu_in_cuStreamGetCaptureInfo_v3 in = { .hStream = stream };
    struct vgpu_out_cuStreamGetCaptureInfo_v3 out = { .tail = a->raw, .tail_size = sizeof(a->raw) };
    CUresult r = (CUresult)vgpu_remote_call_cuStreamGetCaptureInfo_v3(SLOT(cuStreamGetCaptureInfo_v3), 0, &in, &out);
    if (r != CUDA_SUCCESS)
        return r;
    size_t n = out.numDependencies_out;
    memcpy(a->nodes, out.dependencies_out, n * sizeof(CUgraphNode));
    memcpy(a->edges, out.edgeData_out, n * sizeof(CUgraphEdgeData));
    *status = out.captureStatus_out;
    if (id)
        *id = out.id_out;
    if (graph)
        *graph = out.graph_out;
    if (deps)
        *deps = a->nodes;
    if (edges)
        *edges = a->edges;
    if (count)
        *count = n;
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuStreamGetCaptureInfo_v3(CUstream stream, CUstreamCaptureStatus *status, cuuint64_t *id,
                                                     CUgraph *graph, const CUgraphNode **deps,
                                                     const CUgraphEdgeData **edges, size_t *count)
{
    return capture_info(stream, status, id, graph, deps, edges, count);
}

CUresult vgpu_remote_guest_cuStreamGetCaptureInfo_v3_ptsz(CUstream stream, CUstreamCaptureStatus *status,
                                                          cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
                                                          const CUgraphEdgeData **edges, size_t *count)
{
    return capture_info(vgpu_remote_per_thread(stream), status, id, graph, deps, edges, count);
}

CUresult vgpu_remote_guest_cuStreamGetCaptureInfo_v2(CUstream stream, CUstreamCaptureStatus *status, cuuint64_t *id,
                                                     CUgraph *graph, const CUgraphNode **deps, size_t *count)
{
    return capture_info(stream, status, id, graph, deps, NULL, count);
}

CUresult vgpu_remote_guest_cuStreamGetCaptureInfo_v2_ptsz(CUstream stream, CUstreamCaptureStatus *status,
                                                          cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
                                                          size_t *count)
{
    return capture_info(vgpu_remote_per_thread(stream), status, id, graph, deps, NULL, count);
}

/* A capture's dependencies as they cross: each node, and its edge; NULL
 * edges are the default ones, zeros (*made, which the caller frees). */
static CUresult default_edges(size_t n, const CUgraphNode *deps, const CUgraphEdgeData *edges, CUgraphEdgeData **made)
{
    *made = NULL;
    if (n && !deps)
        return CUDA_ERROR_INVALID_VALUE;
    if (n > MAX_DEPS)
        return CUDA_ERROR_INVALID_VALUE;
    if (!edges && n && !(*made = calloc(n, sizeof(**made))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

static CUresult update_dependencies(CUstream stream, CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n,
                                    unsigned flags)
{
    CUgraphEdgeData *zeros;
    CUresult r = default_edges(n, deps, edges, &zeros);
    if (r != CUDA_SUCCESS)
        return r;
    struct vgpu_in_cuStreamUpdateCaptureDependencies_v2 in = {
        .hStream = stream, .numDependencies = n, .dependencies = deps, .dependencyData = edges ? edges : zeros,
        .flags = flags,
    };
    struct vgpu_out_cuStreamUpdateCaptureDependencies_v2 out;
    r = (CUresult)vgpu_remote_call_cuStreamUpdateCaptureDependencies_v2(
        SLOT(cuStreamUpdateCaptureDependencies_v2), 0, &in, &out);
    free(zeros);
    return r;
}

CUresult vgpu_remote_guest_cuStreamUpdateCaptureDependencies_v2(CUstream stream, CUgraphNode *deps,
                                                                const CUgraphEdgeData *edges, size_t n, unsigned flags)
{
    return update_dependencies(stream, deps, edges, n, flags);
}

CUresult vgpu_remote_guest_cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream stream, CUgraphNode *deps,
                                                                     const CUgraphEdgeData *edges, size_t n,
                                                                     unsigned flags)
{
    return update_dependencies(vgpu_remote_per_thread(stream), deps, edges, n, flags);
}

CUresult vgpu_remote_guest_cuStreamUpdateCaptureDependencies(CUstream stream, CUgraphNode *deps, size_t n,
                                                             unsigned flags)
{
    return update_dependencies(stream, deps, NULL, n, flags);
}

CUresult vgpu_remote_guest_cuStreamUpdateCaptureDependencies_ptsz(CUstream stream, CUgraphNode *deps, size_t n,
                                                                  unsigned flags)
{
    return update_dependencies(vgpu_remote_per_thread(stream), deps, NULL, n, flags);
}

/* What a begin's code r leaves: one more capture open if it began. */
static CUresult began(CUresult r)
{
    if (r == CUDA_SUCCESS)
        __atomic_add_fetch(&open_captures, 1, __ATOMIC_ACQ_REL);
    return r;
}

/* What an end's code r leaves: one capture fewer if it ended. */
static CUresult ended(CUresult r)
{
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && r != CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
        return r;
    uint64_t n = __atomic_load_n(&open_captures, __ATOMIC_ACQUIRE);
    while (n && !__atomic_compare_exchange_n(&open_captures, &n, n - 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    return r;
}

CUresult vgpu_remote_guest_cuStreamBeginCapture(CUstream stream)
{
    pthread_once(&arrays_once, make_key);
    return began(vgpu_remote_carried_cuStreamBeginCapture(stream));
}

CUresult vgpu_remote_guest_cuStreamBeginCapture_ptsz(CUstream stream)
{
    pthread_once(&arrays_once, make_key);
    return began(vgpu_remote_carried_cuStreamBeginCapture_ptsz(stream));
}

CUresult vgpu_remote_guest_cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode)
{
    pthread_once(&arrays_once, make_key);
    return began(vgpu_remote_carried_cuStreamBeginCapture_v2(stream, (uint32_t)mode));
}

CUresult vgpu_remote_guest_cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode)
{
    pthread_once(&arrays_once, make_key);
    return began(vgpu_remote_carried_cuStreamBeginCapture_v2_ptsz(stream, (uint32_t)mode));
}

CUresult vgpu_remote_guest_cuStreamEndCapture(CUstream stream, CUgraph *graph)
{
    return ended(vgpu_remote_carried_cuStreamEndCapture(stream, graph));
}

CUresult vgpu_remote_guest_cuStreamEndCapture_ptsz(CUstream stream, CUgraph *graph)
{
    return ended(vgpu_remote_carried_cuStreamEndCapture_ptsz(stream, graph));
}

bool vgpu_remote_capturing(void)
{
    return __atomic_load_n(&open_captures, __ATOMIC_ACQUIRE) != 0;
}

/* NONE while no capture is open and the thread has a current context
 * (else the driver's error: none, or not initialized); else the
 * executor's answer. */
static bool none_capturing(CUstreamCaptureStatus *status)
{
    CUcontext ctx = NULL;
    if (!status || __atomic_load_n(&open_captures, __ATOMIC_ACQUIRE) ||
        VGPU_REMOTE_CUDA(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS || !ctx)
        return false;
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return true;
}

CUresult vgpu_remote_guest_cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status)
{
    if (none_capturing(status))
        return CUDA_SUCCESS;
    return vgpu_remote_carried_cuStreamIsCapturing(stream, status);
}

CUresult vgpu_remote_guest_cuStreamIsCapturing_ptsz(CUstream stream, CUstreamCaptureStatus *status)
{
    if (none_capturing(status))
        return CUDA_SUCCESS;
    return vgpu_remote_carried_cuStreamIsCapturing_ptsz(stream, status);
}

/* A capture into a graph of the caller's, after the nodes given. */
static CUresult begin_into(CUstream stream, CUgraph graph, const CUgraphNode *deps,
                           const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode mode)
{
    CUgraphEdgeData *zeros;
    CUresult r = default_edges(n, deps, edges, &zeros);
    if (r != CUDA_SUCCESS)
        return r;
    struct vgpu_in_cuStreamBeginCaptureToGraph in = {
        .hStream = stream, .hGraph = graph, .mode = mode, .numDependencies = n, .dependencies = deps,
        .dependencyData = edges ? edges : zeros,
    };
    struct vgpu_out_cuStreamBeginCaptureToGraph out;
    pthread_once(&arrays_once, make_key);
    r = began((CUresult)vgpu_remote_call_cuStreamBeginCaptureToGraph(SLOT(cuStreamBeginCaptureToGraph), 0, &in,
                                                                     &out));
    free(zeros);
    return r;
}

CUresult vgpu_remote_guest_cuStreamBeginCaptureToGraph(CUstream stream, CUgraph graph, const CUgraphNode *deps,
                                                       const CUgraphEdgeData *edges, size_t n,
                                                       CUstreamCaptureMode mode)
{
    return begin_into(stream, graph, deps, edges, n, mode);
}

CUresult vgpu_remote_guest_cuStreamBeginCaptureToGraph_ptsz(CUstream stream, CUgraph graph, const CUgraphNode *deps,
                                                            const CUgraphEdgeData *edges, size_t n,
                                                            CUstreamCaptureMode mode)
{
    return begin_into(vgpu_remote_per_thread(stream), graph, deps, edges, n, mode);
}
