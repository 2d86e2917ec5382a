/*
 * What the parts of the fake libcuda share, by area: ../fake_cuda.c
 * (devices, contexts, memory, modules, launches), streams/ and graphs/; the
 * device side is ../gpu/timeline.c.  Hidden: the library exports only cu*
 * names and the fakegpu_* test helpers.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>

#include "test/fake/gpu/timeline.h"
#include "test/fake/gpu/fakegpu.h"

/* ------------------------------------------------------------------------ */
/* Entry points (../fake_cuda.c)                                           */

/* Counts an entry-point call; CUDA_ERROR_NOT_INITIALIZED before cuInit. */
FAKEGPU_HIDDEN CUresult fake_enter(void);

#define ENTER()                                                                                                        \
    do {                                                                                                               \
        CUresult enter_rc_ = fake_enter();                                                                             \
        if (enter_rc_ != CUDA_SUCCESS)                                                                                 \
            return enter_rc_;                                                                                          \
    } while (0)

/* Counts a kernel or graph launch (fakegpu_launches). */
FAKEGPU_HIDDEN void fake_count_launch(void);

/*
 * A stream-ordered call NAME and its per-thread variant NAME_ptsz, which
 * differ only in what the NULL stream means (the legacy stream, or the
 * calling thread's own).  impl takes that as its first argument: 0 or 1.
 */
#define WITH_PTSZ(name, impl, params, ...)                                                                             \
    CUresult name params                                                                                               \
    {                                                                                                                  \
        ENTER();                                                                                                       \
        return impl(0, __VA_ARGS__);                                                                                   \
    }                                                                                                                  \
    CUresult name##_ptsz params                                                                                        \
    {                                                                                                                  \
        ENTER();                                                                                                       \
        return impl(1, __VA_ARGS__);                                                                                   \
    }

/* One call exported under two names (a versioned one and the older). */
#define TWO_NAMES(name, other, impl, params, ...)                                                                      \
    CUresult name params                                                                                               \
    {                                                                                                                  \
        ENTER();                                                                                                       \
        return impl(__VA_ARGS__);                                                                                      \
    }                                                                                                                  \
    CUresult other params                                                                                              \
    {                                                                                                                  \
        ENTER();                                                                                                       \
        return impl(__VA_ARGS__);                                                                                      \
    }

/* ------------------------------------------------------------------------ */
/* fake_cuda.c: devices, contexts, memory, modules, launches                */

FAKEGPU_HIDDEN int fake_current_device(void);     /* CUdevice of the current context, or -1 */
FAKEGPU_HIDDEN int fake_physical_device(int dev); /* of a valid CUdevice */
/* Gives cached pool memory back down to each pool's release threshold
 * (what a synchronisation does); dev -1: every device's pools. */
FAKEGPU_HIDDEN void fake_trim_pools(int dev);

/* ------------------------------------------------------------------------ */
/* Streams, events, stream capture (streams/) and graphs (graphs/)          */

#define GRAPH_MAGIC 0x48505247u /* "GRPH" */
#define GNODE_MAGIC 0x444e4747u /* "GGND" */

/* Graphs: the kernels stream capture recorded */
struct kernel_list {
    struct fake_op *ops;
    size_t count, cap;
};

/* A node added by cuGraphAdd*Node (captured kernels are not nodes here). */
struct CUgraphNode_st {
    unsigned magic;
    CUgraphNodeType type;
    int dev;      /* a memory node's device */
    size_t bytes; /* an allocation node's size */
    CUdeviceptr dptr;
};

struct CUgraph_st {
    unsigned magic;
    int alive;
    struct kernel_list kernels;
    struct CUgraphNode_st **nodes;
    size_t nnodes;
};

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

/* streams.c */
/* Marks a handle object dead; 0 if it was not a live object of that kind.
 * Objects are never freed, so a stale handle is reported, not read after free. */
FAKEGPU_HIDDEN int fake_kill_object(unsigned *magic, int *alive, unsigned want);
FAKEGPU_HIDDEN int fake_object_live(const unsigned *magic, int *alive, unsigned want);
/* The stream a handle means, or NULL for a dead or foreign one. */
FAKEGPU_HIDDEN struct CUstream_st *fake_stream_of(CUstream s, int ptsz);
/* The device a stream's work goes to: its own, or the current context's. */
FAKEGPU_HIDDEN int fake_stream_dev(const struct CUstream_st *st);
/* Queues op on dev for stream st (gpu/timeline.h); its sequence number in *seq if given. */
FAKEGPU_HIDDEN CUresult fake_submit(struct CUstream_st *st, int dev, const struct fake_op *op, unsigned long long *seq);
/* Queues kernel op on stream s (NULL: the legacy stream, or with ptsz the
 * calling thread's), after the host-side launch cost; on a capturing stream,
 * records it into the graph being captured instead. */
FAKEGPU_HIDDEN CUresult fake_stream_launch(CUstream s, int ptsz, const struct fake_op *op);
/* Waits for what s has queued, before something the fake does at once on
 * the host in the stream's order (a copy, a memset, a free).  A stream being
 * captured refuses (the fake captures kernels only). */
FAKEGPU_HIDDEN CUresult fake_stream_before_host_op(CUstream s, int ptsz);
/* The device of a created stream, else the current context's; -1 if none. */
FAKEGPU_HIDDEN int fake_stream_device(CUstream s);

/* capture.c */
FAKEGPU_HIDDEN int fake_capturing(const struct CUstream_st *st);
/* Records kernel op into the graph st captures. */
FAKEGPU_HIDDEN CUresult fake_capture_kernel(struct CUstream_st *st, const struct fake_op *op);
/* A query or synchronisation (potentially unsafe during a stream capture):
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the captures it breaks
 * invalidated, where the calling thread's capture mode forbids it now. */
FAKEGPU_HIDDEN CUresult fake_capture_unsafe_call(void);

/* graphs.c */
FAKEGPU_HIDDEN int fake_kernels_append(struct kernel_list *l, const struct fake_op *op);
FAKEGPU_HIDDEN struct CUgraph_st *fake_graph_new(void);

/* nodes.c: adds a copy of node n to graph g */
FAKEGPU_HIDDEN CUresult fake_graph_add_node(CUgraph g, CUgraphNode *out, struct CUgraphNode_st *n);

/* graph_memory.c: grows dev's graph memory reserve to bytes; -1 when the device is full */
int fake_graph_mem_reserve(int dev, unsigned long long bytes);

#endif /* FAKE_CUDA_H */
