/*
 * Stream capture: a capturing stream records the kernels launched on it
 * (not run) into a graph (../graphs/), which cuStreamEndCapture returns: a
 * graph of its own, or the caller's (cuStreamBeginCaptureToGraph).
 *
 * As the driver's, a capture has a set of dependencies, the nodes its next
 * work follows (cuStreamGetCaptureInfo_v3): those it began after, then the
 * node of the kernel it recorded last, or what the caller made them
 * (cuStreamUpdateCaptureDependencies).  A recorded kernel's node is a
 * kernel node of its own, named by the capture's dependencies; the graph
 * runs the recorded kernels in order (its node list, cuGraphGetNodes,
 * holds the nodes added to it by hand).  Edges are the default ones:
 * others (programmatic) are CUDA_ERROR_NOT_SUPPORTED.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

/* Appends node to an array of *n (room for *cap). */
static int nodes_push(struct CUgraphNode_st ***a, size_t *n, size_t *cap, struct CUgraphNode_st *node)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 8;
        struct CUgraphNode_st **b = realloc(*a, c * sizeof(*b));
        if (!b)
            return -1;
        *a = b;
        *cap = c;
    }
    (*a)[(*n)++] = node;
    return 0;
}

/* Adds node to the capture's dependencies (once), their edges default. */
static int deps_add(struct CUstream_st *st, struct CUgraphNode_st *node)
{
    for (size_t i = 0; i < st->ndeps; i++)
        if (st->deps[i] == node)
            return 0;
    size_t cap = st->deps_cap;
    if (nodes_push(&st->deps, &st->ndeps, &st->deps_cap, node) != 0)
        return -1;
    if (st->deps_cap != cap) {
        CUgraphEdgeData *e = realloc(st->dep_edges, st->deps_cap * sizeof(*e));
        if (!e) {
            st->ndeps--;
            return -1;
        }
        st->dep_edges = e;
    }
    memset(&st->dep_edges[st->ndeps - 1], 0, sizeof(*st->dep_edges));
    return 0;
}

/* Whether node may be a dependency of st's capture: a node of the graph it
 * captures into, or one of a kernel it recorded. */
static int capture_node(const struct CUstream_st *st, const struct CUgraphNode_st *node)
{
    for (size_t i = 0; node && i < st->nmade; i++)
        if (st->made[i] == node)
            return 1;
    for (size_t i = 0; node && st->graph && i < st->graph->nnodes; i++)
        if (st->graph->nodes[i] == node)
            return 1;
    return 0;
}

/* Whether edges (NULL: the default ones) are n default edges. */
static int default_edges(const CUgraphEdgeData *edges, size_t n)
{
    static const CUgraphEdgeData zero;
    for (size_t i = 0; edges && i < n; i++)
        if (memcmp(&edges[i], &zero, sizeof(zero)) != 0)
            return 0;
    return 1;
}

CUresult fake_capture_kernel(struct CUstream_st *st, const struct fake_op *op)
{
    if (st->capture != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    struct CUgraphNode_st *node = calloc(1, sizeof(*node)); /* never freed: a stale handle stays readable */
    if (!node || nodes_push(&st->made, &st->nmade, &st->made_cap, node) != 0) {
        free(node);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    node->magic = GNODE_MAGIC;
    node->type = CU_GRAPH_NODE_TYPE_KERNEL;
    if (fake_kernels_append(&st->graph->kernels, op) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    st->ndeps = 0;
    return deps_add(st, node) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* ------------------------------------------------------------------------ */
/* Stream capture                                                           */

/* A capture into graph into (NULL: a graph of its own), after the n
 * nodes deps of that graph. */
static CUresult begin_capture_into(int ptsz, CUstream s, CUgraph into, const CUgraphNode *deps,
                                   const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode mode)
{
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (st->kind == STREAM_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED || (n && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    if (into && !fake_object_live(&into->magic, &into->alive, GRAPH_MAGIC))
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_capturing(st))
        return CUDA_ERROR_ILLEGAL_STATE;
    if (!default_edges(edges, n))
        return CUDA_ERROR_NOT_SUPPORTED;
    struct CUgraph_st *g = into ? into : fake_graph_new();
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    st->graph = g;
    st->capture_into = into != NULL;
    st->ndeps = st->nmade = 0;
    for (size_t i = 0; i < n; i++) {
        CUresult rc = !capture_node(st, deps[i])   ? CUDA_ERROR_INVALID_VALUE
                      : deps_add(st, deps[i]) != 0 ? CUDA_ERROR_OUT_OF_MEMORY
                                                   : CUDA_SUCCESS;
        if (rc != CUDA_SUCCESS) {
            st->graph = NULL;
            return rc;
        }
    }
    st->capture_id = __atomic_add_fetch(&g_capture_ids, 1, __ATOMIC_RELAXED);
    st->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    captures_add(st, mode);
    return CUDA_SUCCESS;
}

static CUresult begin_capture(int ptsz, CUstream s, CUstreamCaptureMode mode)
{
    return begin_capture_into(ptsz, s, NULL, NULL, NULL, 0, mode);
}

static CUresult begin_capture_global(int ptsz, CUstream s)
{
    return begin_capture(ptsz, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

static CUresult begin_capture_to_graph(int ptsz, CUstream s, CUgraph g, const CUgraphNode *deps,
                                       const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode mode)
{
    return g ? begin_capture_into(ptsz, s, g, deps, edges, n, mode) : CUDA_ERROR_INVALID_VALUE;
}

WITH_PTSZ(cuStreamBeginCapture, begin_capture_global, (CUstream hStream), hStream)
WITH_PTSZ(cuStreamBeginCapture_v2, begin_capture, (CUstream hStream, CUstreamCaptureMode mode), hStream, mode)
WITH_PTSZ(cuStreamBeginCaptureToGraph, begin_capture_to_graph,
          (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData,
           size_t numDependencies, CUstreamCaptureMode mode),
          hStream, hGraph, dependencies, dependencyData, numDependencies, mode)

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
    st->ndeps = st->nmade = 0;
    if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
        if (!st->capture_into) /* the caller's graph stays the caller's */
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

/* The capture's dependencies, the stream's own arrays until its next such
 * call (as the driver's). */
static CUresult capture_info(int ptsz, CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                             const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
    CUresult rc = is_capturing(ptsz, s, status);
    if (rc != CUDA_SUCCESS || *status == CU_STREAM_CAPTURE_STATUS_NONE)
        return rc;
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    int active = st->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (id)
        *id = st->capture_id;
    if (graph)
        *graph = active ? st->graph : NULL;
    if (deps)
        *deps = active && st->ndeps ? (const CUgraphNode *)st->deps : NULL;
    if (edges)
        *edges = active && st->ndeps ? st->dep_edges : NULL;
    if (ndeps)
        *ndeps = active ? st->ndeps : 0;
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

/* The capture's dependencies replaced (CU_STREAM_SET_CAPTURE_DEPENDENCIES)
 * or added to (CU_STREAM_ADD_CAPTURE_DEPENDENCIES): each a node of the
 * graph captured into or of a kernel the capture recorded. */
static CUresult update_dependencies(int ptsz, CUstream s, CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n,
                                    unsigned flags)
{
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags > 1 || (n && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_capturing(st))
        return CUDA_ERROR_ILLEGAL_STATE;
    if (st->capture != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    for (size_t i = 0; i < n; i++)
        if (!capture_node(st, deps[i]))
            return CUDA_ERROR_INVALID_VALUE;
    if (!default_edges(edges, n))
        return CUDA_ERROR_NOT_SUPPORTED;
    if (flags == 1) /* CU_STREAM_SET_CAPTURE_DEPENDENCIES */
        st->ndeps = 0;
    for (size_t i = 0; i < n; i++)
        if (deps_add(st, deps[i]) != 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

static CUresult update_dependencies_v1(int ptsz, CUstream s, CUgraphNode *deps, size_t n, unsigned flags)
{
    return update_dependencies(ptsz, s, deps, NULL, n, flags);
}

WITH_PTSZ(cuStreamUpdateCaptureDependencies, update_dependencies_v1,
          (CUstream hStream, CUgraphNode *dependencies, size_t numDependencies, unsigned int flags), hStream,
          dependencies, numDependencies, flags)
WITH_PTSZ(cuStreamUpdateCaptureDependencies_v2, update_dependencies,
          (CUstream hStream, CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, size_t numDependencies,
           unsigned int flags),
          hStream, dependencies, dependencyData, numDependencies, flags)
