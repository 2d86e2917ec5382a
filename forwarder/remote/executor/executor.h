/*
 * The executor: the host's side of a remote GPU (docs/design/remote.md).  It
 * serves one guest process's library (CUDA or NVML, as its HELLO says) over
 * one connection, calling the host's library (vgpu's own, when it runs
 * under vgpu, so the vGPU's quota and share hold) for it, and trusts
 * nothing the guest sends: every handle is checked against those it gave
 * this guest, every length is bounded.  Codes are the library's (CUresult,
 * nvmlReturn_t), 0 for success.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "forwarder/remote/transport/wire.h"

/* What a handler returns when the message breaks the protocol: the
 * connection is to close. */
#define VGPU_EXEC_CLOSE (-2)

/* The vGPU's bound on page-locked memory, counted by the mediator that
 * started the executor (pin_budget.c): may bytes more be pinned?  Refused
 * gives the vGPU's bytes held and its pinned = in *vgpu_held and *limit;
 * uncounted: no mediator counts them, the executor's own bound alone holds. */
enum vgpu_exec_pin {
    VGPU_EXEC_PIN_GRANTED,
    VGPU_EXEC_PIN_REFUSED,
    VGPU_EXEC_PIN_UNCOUNTED,
};
enum vgpu_exec_pin vgpu_exec_pin(uint64_t bytes, uint64_t *vgpu_held, uint64_t *limit);
/* Gives back bytes granted (nothing where none were counted). */
void vgpu_exec_unpin(uint64_t bytes);

/* How long a guest has to say its HELLO once connected (serve.c). */
#define VGPU_EXEC_HELLO_MS 5000

struct vgpu_exec;

/* A set of handles (guest_state.c). */
struct vgpu_exec_set {
    uint64_t *v;
    size_t cap, used;
};

/* How the executor serves a slot (generated from the call spec,
 * forwarder/remote/spec/): a call of words (nin words in, nout back,
 * returning the call's code), or one that parses its own request and
 * replies itself (returning 0, -1 when the reply could not be sent, or
 * VGPU_EXEC_CLOSE); the request's buffer has a byte to spare past len,
 * where a string it ends with is NUL-ended.  Its flags are the spec's. */
struct vgpu_exec_call {
    int (*words)(struct vgpu_exec *x, void *fn, const uint64_t *in, uint64_t *out);
    unsigned nin, nout;
    int (*manual)(struct vgpu_exec *x, void *fn, void *req, size_t len);
    bool async;        /* the guest may send it VGPU_REMOTE_ASYNC (a launch, a record, an asynchronous memset) */
    bool async_shared; /* the same, only when it comes VGPU_REMOTE_SHARED: its reply's bytes go to a shared block */
    bool sync;         /* it synchronizes (a synchronize, a query, a copy to the host): deferred errors come back */
    bool shared;       /* it may come VGPU_REMOTE_SHARED: a copy naming a shared block of page-locked memory */
    bool by_hash;      /* it may come VGPU_REMOTE_BY_HASH: a load whose image is named by its SHA-256 */
};

/* One library as the executor serves it (generated, tools/generate/gen_remote.py). */
struct vgpu_exec_library {
    unsigned id;                        /* as HELLO names it: 0 CUDA, 1 NVML */
    uint64_t hash;                      /* the ABI's, which the guest's must equal */
    const char *driver;                 /* the library to load: libcuda.so.1, libnvidia-ml.so.1 */
    const char *const *names;           /* each slot's */
    const struct vgpu_exec_call *table; /* each slot's handler (none: refused) */
    unsigned count;
    int bad_handle, not_supported, not_found; /* its codes */
};
extern const struct vgpu_exec_library vgpu_exec_cuda, vgpu_exec_nvml;

/* Devices an executor keeps per-device state for. */
#define VGPU_EXEC_MAX_DEVICES 64

/* A channel's bulk (forwarder/remote/transport/channels.h): size bytes of
 * fd at offset, where the guest's page-locked memory lies. */
struct vgpu_exec_bulk {
    int fd;
    uint64_t offset, size;
};

/* What one guest process's lanes share (guest_state.c): made at its hello
 * by the executor's first thread, which serves the process's first
 * connection, and never freed (the executor ends with the guest).  Every
 * lane reads and changes it under mu, briefly: no lock is held while a
 * call waits in the driver, so that one thread of the guest blocked in a
 * synchronizing call holds no other's. */
struct vgpu_exec_session {
    pthread_mutex_t mu;
    struct vgpu_exec_set handles;       /* the handles given to this guest */
    struct vgpu_exec_set kernels;       /* those of them that are a library's kernels (CUkernel) */
    struct vgpu_exec_kernel *kernel_of; /* each kernel's library, to end them with it */
    struct vgpu_exec_range *reserved;   /* the address ranges it reserved (cuda/vmm.c) */
    struct vgpu_exec_shared *shared;    /* its page-locked blocks shared with the executor (shared_host.c) */
    struct vgpu_exec_layout *layouts;   /* kernels' parameter sizes (guest_state.c) */
    uint64_t layouts_forgotten;         /* how often they were forgotten (guest_state.c) */
    bool said_pointer;                  /* a refused device pointer was logged */
    bool said_capture;                  /* a refused copy on a capturing stream was logged */
    bool said_pinned;                   /* a block refused for the limit on pinned memory was logged */
    /* Each device's layout's length (cuda/private/export_tables.c): 0 not learnt, -1 not measurable. */
    int layout_length[VGPU_EXEC_MAX_DEVICES];
    /* The guest's asynchronous calls made so far, across its lanes, in its
     * order (wire.h's order): a lane waits on made for its turn. */
    uint64_t made;
    pthread_cond_t turn;
    bool lost;    /* a lane ended with messages unmade: every wait ends, the guest's calls fail */
    int first_fd; /* the first connection's socket (-1: none), shut when a lane is lost */
};

/* One lane of a guest process: the first connection, or a thread's own
 * (VGPU_REMOTE_LANE), each served by a thread of the executor's. */
struct vgpu_exec {
    struct vgpu_wire wire;               /* the lane's connection (its socket, then its ring) */
    struct vgpu_exec_session *s;         /* the guest process's */
    const struct vgpu_exec_library *lib; /* the library it drives */
    void *driver;                        /* dlopen(lib->driver) */
    void **fn;                           /* the driver's function of each slot, looked up at first use (atomically) */
    uint64_t window, window_size;        /* the addresses reserved for shared blocks, the guest's and the
                                          * executor's alike (set at the hello) */
    struct vgpu_exec_bulk bulk;          /* a channel's: the window is its bulk, mapped (fd -1: none) */
    bool shared_host;                    /* the call being served came VGPU_REMOTE_SHARED */
    bool by_hash;                        /* the call being served came VGPU_REMOTE_BY_HASH (image_cache.h) */
    bool async;                          /* the call being served came VGPU_REMOTE_ASYNC: no reply */
    bool sync;                           /* the call being served synchronizes: it returns a deferred error */
    int deferred;                        /* the first error of an asynchronous call since the last synchronizing
                                          * one, of this lane's calls */
    const char *call;                    /* the name of the call being served, for the log */
    int passed_fd;                       /* the call's descriptor of the guest's (VGPU_REMOTE_FD_IN), or -1:
                                          * the handler's to use; closed after it */
    bool fd_wanted;                      /* the call being served came VGPU_REMOTE_FD_OUT */
    int fd_back;                         /* a descriptor for the guest (VGPU_REMOTE_FD_OUT), or -1: a handler's,
                                          * sent beside its reply when the call succeeds, closed either way */
};

/* A session with nothing of a guest's yet (serve.c). */
void vgpu_exec_session_init(struct vgpu_exec_session *s);

/* Whether a logging flag of the session (said_pointer, ...) was unset:
 * set now, so that what it says is said once a guest. */
bool vgpu_exec_say_once(struct vgpu_exec *x, bool *said);

/* The driver's function of slot (or of the slot named so), looked up once
 * and kept in fn; NULL when the driver has none. */
void *vgpu_exec_function(struct vgpu_exec *x, unsigned slot);
void *vgpu_exec_function_named(struct vgpu_exec *x, const char *name);

/* Whether h is a handle this guest was given (NULL always is, and where a
 * stream is wanted the default streams CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD: the driver checks what they mean where they are
 * passed).  Handles are not typed: one the guest was given may be passed as
 * another kind, which the driver checks as it does a process's own. */
bool vgpu_exec_handle_known(const struct vgpu_exec *x, uint64_t h, bool stream);
void vgpu_exec_handle_add(struct vgpu_exec *x, uint64_t h);
void vgpu_exec_handle_drop(struct vgpu_exec *x, uint64_t h);
/* A library's kernel given to the guest: a handle, which launches take as
 * a function, but whose parameters cuKernelGetParamInfo says; it ends with
 * its library. */
struct vgpu_exec_kernel {
    struct vgpu_exec_kernel *next;
    uint64_t kernel, library;
};
void vgpu_exec_kernel_add(struct vgpu_exec *x, uint64_t h, uint64_t library);
/* An address range a guest reserved (cuMemAddressReserve): its own. */
struct vgpu_exec_range {
    struct vgpu_exec_range *next;
    uint64_t base, size;
};

/* The guest's page-locked memory shared with the executor (shared_host.c):
 * a SHARE or an UNSHARE served and replied to (0, -1, VGPU_EXEC_CLOSE as
 * vgpu_exec_one); and where the executor has the n bytes at the guest's
 * address guest, all in one shared block, or NULL. */
int vgpu_exec_share(struct vgpu_exec *x, const void *req, size_t len);
/* Reserves the window (its base and size; 0 and 0 without one), which the
 * HELLO's reply gives the guest; over a channel, the channel's bulk mapped
 * there, whose blocks a SHARE names with no memfd. */
void vgpu_exec_reserve_window(struct vgpu_exec *x, uint64_t *base, uint64_t *size);
int vgpu_exec_unshare(struct vgpu_exec *x, const void *req, size_t len);
void *vgpu_exec_shared_at(const struct vgpu_exec *x, uint64_t guest, uint64_t n);

/* After a call that may free functions (a context reset, released or
 * destroyed, a module unloaded): kernels' layouts are learnt again. */
void vgpu_exec_context_changed(struct vgpu_exec *x);
bool vgpu_exec_is_kernel(const struct vgpu_exec *x, uint64_t h);

/* Whether a launch's n parameters of these sizes are kernel f's, as
 * cuFuncGetParamInfo says (the driver reads each of f's parameters at its
 * own size, whatever the guest sent).  CUDA only. */
#define VGPU_EXEC_MAX_PARAMS 256
bool vgpu_exec_params_match(struct vgpu_exec *x, uint64_t f, unsigned n, const uint32_t *sizes);

/* Whether p lies in one of the driver's device allocations of the current
 * context (cuMemGetAddressRange), or in a range the guest reserved: never
 * the executor's own memory, which a copy or a memset through a unified
 * address would reach.  CUDA only; the
 * first refusal of a guest is logged, naming call. */
bool vgpu_exec_device_memory(struct vgpu_exec *x, uint64_t p, const char *call);
/* The same for the n bytes from p, all in one allocation. */
bool vgpu_exec_device_range(struct vgpu_exec *x, uint64_t p, uint64_t n, const char *call);
/* The same for height rows of width elements of size bytes, pitch apart
 * (a memset's, a copy's): from the first row's start to the last's end. */
bool vgpu_exec_device_rows(struct vgpu_exec *x, uint64_t p, uint64_t pitch, uint64_t width, uint64_t size,
                           uint64_t height, const char *call);

/* A request that is not what its call sends (the guest is broken or
 * hostile): logged; VGPU_EXEC_CLOSE, for a handler to return. */
int vgpu_exec_malformed(const char *call, size_t len);

/* Replies r with the iovecs as payload; 0, or -1 (the guest is gone).  To
 * an asynchronous call, nothing: an error is kept for the next
 * synchronizing call's reply, which carries it instead of its own success. */
int vgpu_exec_reply(struct vgpu_exec *x, int r, const struct iovec *iov, int n);

/* One call, its header read and checked (vgpu_wire_read_hdr) and its
 * payload read (into a buffer with a byte to spare): served and replied to.  0; -1 when the reply could not be
 * sent (errno: the guest is gone); VGPU_EXEC_CLOSE when the message breaks
 * the protocol, said in the log (the connection is to close). */
struct vgpu_remote_hdr;
int vgpu_exec_one(struct vgpu_exec *x, const struct vgpu_remote_hdr *h, void *payload);

/* Serves the guest on fd (and on the ring it asks for) until it goes; the
 * process's exit status. */
int vgpu_exec_serve(int fd);
/* The same on a connection made already: a socket (bulk NULL), or a
 * channel's ring with no socket (w->fd -1) and the channel's bulk. */
int vgpu_exec_serve_wire(const struct vgpu_wire *w, const struct vgpu_exec_bulk *bulk);

/* vgpu-executor --bar: serves the channels of the file open on fd (a VM's
 * ivshmem file, channels.h; name for the log), count of them, an executor
 * process a claimed channel, until killed or the file is removed; a guest
 * whose heartbeat stands still for timeout_ns is gone.  The process's
 * exit status. */
int vgpu_exec_serve_channels(int fd, const char *name, unsigned count, uint64_t timeout_ns);
