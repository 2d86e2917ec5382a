/*
 * What the parts of the fake libcuda share, by area: the driver itself
 * (init.c, counters.c, accounting.c, devices.c, ...), contexts/, memory/,
 * copies/, modules/, streams/ and graphs/; the device side is
 * ../gpu/timeline.c.  Hidden: the library exports only cu* names and the
 * fakegpu_* test helpers.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>

#include "test/fake/gpu/timeline.h"
#include "test/fake/gpu/fakegpu.h"

/* ------------------------------------------------------------------------ */
/* Entry points (init.c, counters.c)                                        */

/* Counts an entry-point call; CUDA_ERROR_NOT_INITIALIZED before cuInit. */
FAKEGPU_HIDDEN CUresult fake_enter(void);

#define ENTER()                                                                                                        \
    do {                                                                                                               \
        CUresult enter_rc_ = fake_enter();                                                                             \
        if (enter_rc_ != CUDA_SUCCESS)                                                                                 \
            return enter_rc_;                                                                                          \
    } while (0)

/* Counts an entry-point call that works before cuInit too (fakegpu_calls). */
FAKEGPU_HIDDEN void fake_count_call(void);
#define COUNT_CALL() fake_count_call()
/* Counts a kernel or graph launch (fakegpu_launches). */
FAKEGPU_HIDDEN void fake_count_launch(void);

/* A line of the driver's logs (logs.c: cuLogsDumpToMemory), as printf. */
FAKEGPU_HIDDEN void fake_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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

/* Owned by init.c: the library's lock.  It guards the contexts' state
 * (contexts/), the allocations (memory/) and the pools; taken before the
 * shared state's lock (accounting.c charges with it held). */
FAKEGPU_HIDDEN extern pthread_mutex_t fake_lock;
#define LOCK() pthread_mutex_lock(&fake_lock)
#define UNLOCK() pthread_mutex_unlock(&fake_lock)

/* ------------------------------------------------------------------------ */
/* Devices (devices.c) and the memory they hold (accounting.c)              */

/* What a device reports of its SMs (as an H100: cuCtxSetLimit's stack is per resident thread). */
#define THREADS_PER_SM 2048
#define SM_COUNT 132

/* Reads CUDA_VISIBLE_DEVICES, once: cuInit. */
FAKEGPU_HIDDEN void fake_devices_init(void);
FAKEGPU_HIDDEN int fake_device_count(void);
FAKEGPU_HIDDEN int fake_valid_device(CUdevice dev);
FAKEGPU_HIDDEN int fake_physical_device(int dev); /* of a valid CUdevice */
FAKEGPU_HIDDEN unsigned long long fake_total_memory(void);

/* Takes bytes of device memory; -1 when the device is full. */
FAKEGPU_HIDDEN int fake_charge(int dev, unsigned long long bytes);
FAKEGPU_HIDDEN void fake_uncharge(int dev, unsigned long long bytes);

/* ------------------------------------------------------------------------ */
/* Contexts (contexts/)                                                     */

#define CTX_MAGIC 0x43545846u /* "FXTC" */

/* Context limits (cuCtxSetLimit) that reserve device memory (limits.c). */
enum { LIMIT_STACK, LIMIT_PRINTF, LIMIT_HEAP, LIMITS };

struct CUctx_st {
    unsigned magic;
    int device;
    int refcount; /* primary: retain count; created: 1 while alive */
    int primary;
    int alive;
    unsigned flags;
    int sm_count;                     /* its execution affinity: the SMs it may use */
    size_t limit[LIMITS];             /* 0: the default */
    unsigned long long limit_charged; /* device memory its limits reserve beyond the defaults */
    unsigned long long id;            /* cuCtxGetId: a primary context's anew each time it comes alive */
};

/* contexts.c */
FAKEGPU_HIDDEN int fake_ctx_valid(CUcontext ctx);
/* The id a context coming alive takes (never one before it). */
FAKEGPU_HIDDEN unsigned long long fake_new_context_id(void);
/* A context of dev was made (0, or -1 when out of memory) or is gone: the
 * device memory a device's contexts take.  Called with fake_lock held. */
FAKEGPU_HIDDEN int fake_context_added_locked(int dev);
FAKEGPU_HIDDEN void fake_context_gone_locked(struct CUctx_st *ctx);

/* current.c: the calling thread's stack of current contexts */
FAKEGPU_HIDDEN CUcontext fake_current_ctx(void);
FAKEGPU_HIDDEN int fake_current_device(void); /* CUdevice of the current context, or -1 */
FAKEGPU_HIDDEN CUresult fake_push_ctx(CUcontext ctx);
FAKEGPU_HIDDEN int fake_ctx_stack_full(void); /* fake_push_ctx would fail */
FAKEGPU_HIDDEN void fake_forget_ctx(CUcontext ctx);
/* The device of ctx (NULL: the current context). */
FAKEGPU_HIDDEN CUresult fake_ctx_device(CUdevice *device, CUcontext ctx);

/* ------------------------------------------------------------------------ */
/* Memory (memory/)                                                         */

enum alloc_kind {
    A_DEVICE,     /* cuMemAlloc*, cuMemAllocPitch*, cuMemAllocManaged */
    A_POOL,       /* stream-ordered allocation, belongs to a pool */
    A_HOST,       /* cuMemAllocHost: not device memory, not counted */
    A_RESERVE,    /* cuMemAddressReserve: PROT_NONE address range */
    A_MAPPED,     /* cuMemMap: part of a reservation backed by a handle */
    A_REGISTERED, /* cuMemHostRegister: the caller's memory, not counted */
    A_IPC,        /* cuIpcOpenMemHandle: another process's device memory, not counted here */
};

struct CUmemPoolHandle_st;
struct vmm_handle;

struct alloc {
    uintptr_t base;
    size_t size;
    int dev;
    enum alloc_kind kind;
    struct CUmemPoolHandle_st *pool;
    struct vmm_handle *handle;
    struct CUctx_st *ctx;    /* A_DEVICE: the context it was made in; freed with it */
    int ipc_fd;              /* A_DEVICE given to other processes (cuIpcGetMemHandle): its memfd + 1; 0 none */
    int sync_memops;         /* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, as cuPointerSetAttribute set it */
    struct managed *managed; /* cuMemAllocManaged's: its pages' advice and prefetches (memory/managed.c) */
    struct alloc *next;
};

/* Owned by allocations.c: what the fake handed out, under fake_lock. */
FAKEGPU_HIDDEN extern struct alloc *fake_allocs;

#define ACCESSIBLE                                                                                                     \
    ((1u << A_DEVICE) | (1u << A_POOL) | (1u << A_HOST) | (1u << A_MAPPED) | (1u << A_REGISTERED) | (1u << A_IPC))

/* allocations.c */
FAKEGPU_HIDDEN void *fake_map_bytes(size_t size, int prot, int low32);
FAKEGPU_HIDDEN struct alloc *fake_track(void *p, size_t size, int dev, enum alloc_kind kind,
                                        struct CUmemPoolHandle_st *pool, struct vmm_handle *handle);
/* Unlinks the record of a kind in mask starting exactly at base. */
FAKEGPU_HIDDEN struct alloc *fake_untrack_locked(uintptr_t base, unsigned kind_mask);
/* Untracks the mapping of that kind starting exactly at base and unmaps it:
 * 0, or CUDA_ERROR_INVALID_VALUE when there is none. */
FAKEGPU_HIDDEN CUresult fake_unmap_tracked(uintptr_t base, enum alloc_kind kind);
FAKEGPU_HIDDEN struct alloc *fake_find_containing_locked(uintptr_t p, size_t n, unsigned kind_mask);
/* Whether [p, p+n) lies inside memory the fake handed out. */
FAKEGPU_HIDDEN int fake_range_ok(CUdeviceptr p, size_t n);

/* device_memory.c */
/* A context is gone: what was allocated in it goes too.  Called with fake_lock held. */
FAKEGPU_HIDDEN void fake_free_context_allocs_locked(struct CUctx_st *ctx);
/* Frees a cuMemAlloc* or pool allocation, once the kernels that might use it are done. */
FAKEGPU_HIDDEN CUresult fake_mem_free(CUdeviceptr ptr);

/* managed.c: the state of a managed allocation of size bytes, or NULL
 * when out of memory; freed with the allocation */
FAKEGPU_HIDDEN struct managed *fake_managed_new(size_t size);
FAKEGPU_HIDDEN void fake_managed_free(struct managed *m);

/* pools.c */
/* Gives cached pool memory back down to each pool's release threshold
 * (what a synchronisation does); dev -1: every device's pools. */
FAKEGPU_HIDDEN void fake_trim_pools(int dev);
/* A freed block of a pool: its bytes stay cached in the pool. */
FAKEGPU_HIDDEN void fake_pool_return_block(struct alloc *a);

/* ------------------------------------------------------------------------ */
/* Copies (copies/)                                                         */

/* copies.c: one row of bytes; device ranges are checked */
/* An array's bytes (memory/arrays.c): rows of *row bytes, *height of them
 * a layer, *depth layers; NULL for no live array. */
FAKEGPU_HIDDEN unsigned char *fake_array_bytes(CUarray a, size_t *row, size_t *height, size_t *depth);
/* The bytes of one of a live array's elements (its format's times its channels); 0 for none. */
FAKEGPU_HIDDEN size_t fake_array_element(CUarray a);
/* Whether m is a live mipmapped array (memory/arrays.c). */
FAKEGPU_HIDDEN int fake_mipmapped_array_valid(CUmipmappedArray m);
/* A 3D copy between host memory, device addresses and arrays
 * (copies/copies_3d.c); a 2D one is its Depth 1. */
FAKEGPU_HIDDEN CUresult fake_copy_3d(const CUDA_MEMCPY3D *c);
FAKEGPU_HIDDEN CUresult fake_copy_htod(CUdeviceptr dst, const void *src, size_t n);
FAKEGPU_HIDDEN CUresult fake_copy_dtoh(void *dst, CUdeviceptr src, size_t n);
FAKEGPU_HIDDEN CUresult fake_copy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n);
/* n bytes between host memory and an array's bytes from off (copies_3d.c). */
FAKEGPU_HIDDEN CUresult fake_copy_htoa(CUarray a, size_t off, const void *src, size_t n);
FAKEGPU_HIDDEN CUresult fake_copy_atoh(void *dst, CUarray a, size_t off, size_t n);

/* ------------------------------------------------------------------------ */
/* Modules, libraries, kernels and launches (modules/)                      */

#define MODULE_MAGIC 0x444f4d46u /* "FMOD" */

struct CUfunc_st {
    unsigned magic;
    const char *name;
    unsigned nargs;
    unsigned char arg_size[FAKE_MAX_ARGS];
    CUresult (*check)(const unsigned long long *args); /* at launch; NULL: anything goes */
    void (*run)(const unsigned long long *args);       /* on the device; NULL: it only takes time */
    int timed; /* args[0] is its device time in ns; else it takes FAKEGPU_KERNEL_NS */
    int dynamic_smem, carveout; /* its attributes a program sets (attributes.c); atomic */
};

struct CUmod_st {
    unsigned magic;
    int alive;
};

/* kernels.c: the built-in kernels, which every module holds */
FAKEGPU_HIDDEN const struct CUfunc_st *fake_kernel_of(const void *handle);
FAKEGPU_HIDDEN struct CUfunc_st *fake_kernel_by_name(const char *name);
/* How many built-in kernels there are, and the i-th (in a fixed order). */
FAKEGPU_HIDDEN unsigned fake_kernel_count(void);
FAKEGPU_HIDDEN struct CUfunc_st *fake_kernel_at(unsigned i);

/* modules.c: whether image is one (a string starting with "fakegpu") */
FAKEGPU_HIDDEN int fake_image_ok(const void *image);
/* A file's bytes, NUL after them, in *image (the caller frees it). */
FAKEGPU_HIDDEN CUresult fake_read_image(const char *path, char **image);

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
    struct fake_node *params; /* a node added by hand: its graph and its type's parameters (graphs/graphs.h) */
};

struct CUgraph_st {
    unsigned magic;
    int alive;
    struct kernel_list kernels;
    struct CUgraphNode_st **nodes;
    size_t nnodes;
    struct fake_edge *edges; /* between its nodes (graphs/edges.c) */
    size_t nedges;
};

enum stream_kind { STREAM_CREATED, STREAM_LEGACY, STREAM_PER_THREAD };

struct CUstream_st {
    unsigned magic;
    int alive;
    enum stream_kind kind;
    int device; /* a created stream's; the default streams use the current context's */
    CUcontext ctx; /* a created stream's context (cuStreamGetCtx) */
    unsigned flags;
    int priority;
    unsigned long long last[FAKEGPU_MAX_DEVICES]; /* latest operation on each device (atomic) */
    /* Stream capture.  As with the driver, a capture belongs to the thread
     * that began it; racing it with other uses of the stream is undefined. */
    CUstreamCaptureStatus capture;
    unsigned long long capture_id;
    struct CUgraph_st *graph; /* being captured */
    int capture_into;         /* the graph is the caller's (cuStreamBeginCaptureToGraph), not made by the capture */
    /* The nodes the capture's next work depends on (cuStreamGetCaptureInfo_v3),
     * and the nodes it made for the kernels it recorded (capture.c). */
    struct CUgraphNode_st **deps, **made;
    CUgraphEdgeData *dep_edges; /* the deps' edges: the default ones (zeros) */
    size_t ndeps, deps_cap, nmade, made_cap;
    /* Attributes (attributes.c); zeros: the defaults. */
    CUlaunchAttributeValue sync_policy, mem_sync_domain, mem_sync_domain_map, access_policy_window;
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
FAKEGPU_HIDDEN int fake_graph_mem_reserve(int dev, unsigned long long bytes);

#endif /* FAKE_CUDA_H */
