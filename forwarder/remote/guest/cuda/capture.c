/*
 * Stream capture's state, the guest's side (forwarder/remote/executor/cuda/capture.c is
 * the other; what crosses: docs/design/remote.md).  The driver hands out arrays it
 * owns until the thread's next such call; here they are the calling
 * thread's copies of what the executor sent, kept to that call too.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name
#define MAX_DEPS 4096

/* The calling thread's last arrays.  Owned by the thread, and freed at
 * its exit by the key's destructor; all are on one list too (under
 * arrays_lock), so that the process's own thread's, which no destructor
 * frees, is still the process's memory when it ends. */
struct arrays {
    struct arrays *next, **prev;
    uint64_t raw[2 * MAX_DEPS]; /* the reply: count nodes, then count edges */
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

static void child_after_fork(void)
{
    pthread_mutex_init(&arrays_lock, NULL);
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

/* Words back: the status, the id, the graph, the count; then count nodes
 * and count edges (8 bytes each). */
static CUresult capture_info(CUstream stream, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                             const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *count)
{
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    struct arrays *a = thread_arrays();
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t q = (uint64_t)(uintptr_t)stream, head[4] = { 0 };
    size_t got = 0;
    struct iovec req = { &q, sizeof(q) }, rep[2] = { { head, sizeof(head) }, { a->raw, sizeof(a->raw) } };
    CUresult r = vgpu_remote_call(SLOT(cuStreamGetCaptureInfo_v3), &req, 1, rep, 2, &got);
    if (r != CUDA_SUCCESS)
        return r;
    size_t n = head[3];
    if (got < sizeof(head) || n > MAX_DEPS || got != sizeof(head) + n * 16)
        return CUDA_ERROR_UNKNOWN;
    memcpy(a->nodes, a->raw, n * sizeof(CUgraphNode));
    memcpy(a->edges, a->raw + n, n * sizeof(CUgraphEdgeData));
    *status = (CUstreamCaptureStatus)head[0];
    if (id)
        *id = head[1];
    if (graph)
        *graph = (CUgraph)(uintptr_t)head[2];
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
