/*
 * The guest's page-locked memory shared with the executor (executor.h,
 * docs/design/remote.md): a block the guest maps from a memfd sealed against
 * shrinking, which the executor maps too and registers with its driver
 * (cuMemHostRegister, portable and mapped), so that a copy between it and
 * the device is the driver's own DMA from or to it, asynchronous as on a
 * local driver, and may be captured into a graph.  Where both have the
 * window of addresses the executor reserves at the hello, a block is at
 * the same address in both, so that its device view (unified addressing)
 * is the guest's own address: kernels read and write it as on a local
 * driver.  A block unshared leaves its addresses reserved in the executor
 * (inaccessible) for the executor's life: a graph or a copy still naming
 * them can never reach memory the executor uses for anything else.
 */
#define _GNU_SOURCE
#include "forwarder/remote/executor/cuda/calls.h"

#include "common/log.h"
#include "forwarder/remote/transport/shm.h"
#include "forwarder/remote/transport/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A guest's blocks at most: each copy looks them up. */
#define MAX_BLOCKS 4096
/* The window: where it is tried (far from where the kernel puts mappings,
 * top down from 128 TiB, and from programs' heaps, bottom up), its size. */
#define WINDOW_FIRST 0x200000000000ull
#define WINDOW_STEP 0x10000000000ull
#define WINDOW_TRIES 8
#define WINDOW_SIZE (256ull << 30)

void vgpu_exec_reserve_window(struct vgpu_exec *x, uint64_t *base, uint64_t *size)
{
    *base = *size = 0;
#ifdef __SANITIZE_THREAD__
    /* ThreadSanitizer's build (the concurrency suite): its shadow has those
     * addresses; blocks are shared with no window, their device views elsewhere. */
    (void)x;
    return;
#endif
    uint64_t want_size = x->bulk.fd >= 0 ? x->bulk.size : WINDOW_SIZE;
    if (!want_size)
        return;
    for (int i = 0; i < WINDOW_TRIES; i++) {
        uint64_t want = WINDOW_FIRST + (uint64_t)i * WINDOW_STEP;
        if (!vgpu_shm_reserve_at((void *)(uintptr_t)want, want_size))
            continue;
        /* A channel's bulk is the window, mapped over its reservation. */
        if (x->bulk.fd >= 0 && mmap((void *)(uintptr_t)want, want_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                                    x->bulk.fd, (off_t)x->bulk.offset) == MAP_FAILED) {
            vgpu_warn("executor: the channel's bulk cannot be mapped (%s): page-locked memory is the guest's own",
                      strerror(errno));
            munmap((void *)(uintptr_t)want, want_size);
            return;
        }
        x->window = *base = want;
        x->window_size = *size = want_size;
        return;
    }
    vgpu_info("executor: no window of addresses for shared page-locked memory: a block's device view is another "
              "address than the guest's");
}

/* Whether the length bytes at guest lie in the window; whether they meet it. */
static bool in_window(const struct vgpu_exec *x, uint64_t guest, uint64_t length)
{
    return guest >= x->window && guest - x->window < x->window_size && length <= x->window_size - (guest - x->window);
}

static bool meets_window(const struct vgpu_exec *x, uint64_t guest, uint64_t length)
{
    return x->window_size && guest < x->window + x->window_size && x->window < guest + length;
}

/* Where a block was, made inaccessible: in the window, back to its
 * reservation (a channel's bulk stays mapped: the guest's to use again). */
static void unmap_block(const struct vgpu_exec *x, void *at, uint64_t length)
{
    if (x->bulk.fd >= 0)
        return;
    if (vgpu_shm_reserve(at, length) != 0)
        vgpu_warn("executor: a shared block's addresses could not be kept reserved (%s)", strerror(errno));
}

struct vgpu_exec_shared {
    struct vgpu_exec_shared *next;
    uint64_t guest, length; /* where the guest has it */
    void *at;               /* where the executor has it; NULL while it is being shared */
};

/* A block another lane of the guest unshares while a copy uses it is
 * the guest's own undoing, as freeing memory a copy reads is a program's:
 * the copy may fault, and the executor with it. */
void *vgpu_exec_shared_at(const struct vgpu_exec *x, uint64_t guest, uint64_t n)
{
    void *at = NULL;
    pthread_mutex_lock(&x->s->mu);
    for (const struct vgpu_exec_shared *b = x->s->shared; b && !at; b = b->next)
        if (b->at && guest >= b->guest && guest - b->guest < b->length && n <= b->length - (guest - b->guest))
            at = (char *)b->at + (guest - b->guest); /* (a block being shared has none yet) */
    pthread_mutex_unlock(&x->s->mu);
    return at;
}

/* What a guest's blocks may pin of the host's memory in all: half of it,
 * or VGPU_REMOTE_PINNED_MIB. */
static uint64_t pinned_limit(void)
{
    const char *s = getenv("VGPU_REMOTE_PINNED_MIB");
    char *end;
    unsigned long long mib = s && *s ? strtoull(s, &end, 10) : 0;
    if (s && *s && !*end && mib)
        return (uint64_t)mib << 20;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : UINT64_MAX;
}

/* Under the session's mu: whether the length bytes at guest meet a block shared already. */
static bool overlaps(const struct vgpu_exec *x, uint64_t guest, uint64_t length)
{
    for (const struct vgpu_exec_shared *b = x->s->shared; b; b = b->next)
        if (guest < b->guest + b->length && b->guest < guest + length)
            return true;
    return false;
}

/* A SHARE's reply carries the block's device view (0: none); UNSHARE's nothing. */
static int reply(struct vgpu_exec *x, int code, const uint64_t *view)
{
    struct iovec v = { (void *)view, sizeof(*view) };
    return vgpu_wire_send(&x->wire, VGPU_REMOTE_REPLY, (uint32_t)code, 0, &v, code == 0 && view);
}

/* The memfd of a SHARE, from the socket: a descriptor whose memory cannot
 * shrink under the executor's mapping, of at least length bytes; -1 (the
 * message's own fault: the connection closes) or -2 (refused). */
static int take_memfd(struct vgpu_exec *x, uint64_t length)
{
    struct vgpu_remote_hdr h;
    int fd = -1;
    if (vgpu_wire_read_hdr_fd(x->wire.fd, &h, &fd) != 0 || h.type != VGPU_REMOTE_SHARE || h.len != 0 || fd < 0) {
        vgpu_error("executor: a SHARE whose memory did not follow on the socket: closing");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    /* Sealed against writing, it could not be mapped writable: refused
     * before a mapping at a fixed address is tried. */
    if (seals < 0 || !(seals & F_SEAL_SHRINK) || (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) ||
        fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < length) {
        vgpu_warn("executor: the guest shared memory that could shrink under the executor, cannot be written, or is "
                  "shorter than it says (%llu bytes): refused",
                  (unsigned long long)length);
        close(fd);
        return -2;
    }
    return fd;
}

/* Under the session's mu: unlinks b from the guest's blocks. */
static void unlink_block(struct vgpu_exec *x, struct vgpu_exec_shared *b)
{
    struct vgpu_exec_shared **at = &x->s->shared;
    while (*at && *at != b)
        at = &(*at)->next;
    if (*at)
        *at = b->next;
}

/* Under the session's mu: whether the block of length bytes at guest may
 * be shared (within the host's bound and the guest's count, aligned, not
 * meeting a block shared already, in the window or clear of it); if so,
 * a pending entry (at NULL) in the guest's blocks holds its place while
 * it is mapped and registered, with no lock held.  NULL with *code. */
static struct vgpu_exec_shared *place_block(struct vgpu_exec *x, int fd, uint64_t guest, uint64_t length, int *code)
{
    unsigned blocks = 0;
    uint64_t pinned = 0;
    for (const struct vgpu_exec_shared *b = x->s->shared; b; b = b->next) {
        blocks++;
        pinned += b->length;
    }
    static uint64_t limit; /* the host's bound, the same for every lane: read once */
    if (!__atomic_load_n(&limit, __ATOMIC_RELAXED))
        __atomic_store_n(&limit, pinned_limit(), __ATOMIC_RELAXED);
    uint64_t bound = __atomic_load_n(&limit, __ATOMIC_RELAXED);
    if (length > bound || pinned > bound - length) {
        if (!x->s->said_pinned)
            vgpu_warn("executor: the guest's page-locked memory would pin more than %llu MiB of the host's: the "
                      "block stays the guest's own (VGPU_REMOTE_PINNED_MIB; said once)",
                      (unsigned long long)(bound >> 20));
        x->s->said_pinned = true;
        *code = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    bool same = in_window(x, guest, length);
    struct vgpu_exec_shared *b = NULL;
    *code = CUDA_ERROR_INVALID_VALUE;
    if (length && guest && !(guest % 4096) && !(length % 4096) && guest + length > guest && blocks < MAX_BLOCKS &&
        !overlaps(x, guest, length) && (same || !meets_window(x, guest, length)) && (fd >= 0 || same) &&
        (b = malloc(sizeof(*b)))) {
        *b = (struct vgpu_exec_shared){ .next = x->s->shared, .guest = guest, .length = length, .at = NULL };
        x->s->shared = b;
    }
    return b;
}

/* The block of length bytes at guest (of memfd fd, or -3: in a channel's
 * bulk) shared and registered, replied to.  The session's mu is held to
 * place it and to make it the guest's, never while the mediator is asked,
 * the block mapped or the driver registers it. */
static int share_block(struct vgpu_exec *x, int fd, uint64_t guest, uint64_t length)
{
    uint64_t view = 0;
    CUresult (*reg)(void *, size_t, unsigned) =
        x->lib->id == 0 ? (CUresult(*)(void *, size_t, unsigned))vgpu_exec_function_named(x, "cuMemHostRegister_v2")
                        : NULL;
    CUresult (*device_view)(CUdeviceptr *, void *, unsigned) =
        reg ? (CUresult(*)(CUdeviceptr *, void *, unsigned))vgpu_exec_function_named(x, "cuMemHostGetDevicePointer_v2")
            : NULL;
    int code = x->lib->not_supported;
    pthread_mutex_lock(&x->s->mu);
    struct vgpu_exec_shared *b = reg ? place_block(x, fd, guest, length, &code) : NULL;
    pthread_mutex_unlock(&x->s->mu);
    if (!b) {
        if (fd >= 0)
            close(fd);
        return reply(x, code, &view);
    }
    /* Then the vGPU's bound, across its guests (pin_budget.c). */
    uint64_t vgpu_held = 0, vgpu_limit = 0;
    enum vgpu_exec_pin pin = vgpu_exec_pin(length, &vgpu_held, &vgpu_limit);
    void *at = MAP_FAILED;
    /* In the window at the guest's own address, which nothing of the
     * executor's can be; a block that only meets the window is refused. */
    bool same = in_window(x, guest, length);
    if (pin == VGPU_EXEC_PIN_REFUSED) {
        code = CUDA_ERROR_OUT_OF_MEMORY;
        if (vgpu_exec_say_once(x, &x->s->said_pinned))
            vgpu_warn("executor: the guest's page-locked block of %llu MiB would pass its vGPU's pinned = %llu MiB "
                      "(its guests hold %llu MiB): the block stays the guest's own (said once)",
                      (unsigned long long)(length >> 20), (unsigned long long)(vgpu_limit >> 20),
                      (unsigned long long)(vgpu_held >> 20));
    } else if ((at = fd < 0 ? (void *)(uintptr_t)guest
                            : mmap(same ? (void *)(uintptr_t)guest : NULL, length, PROT_READ | PROT_WRITE,
                                   MAP_SHARED | (same ? MAP_FIXED : 0), fd, 0)) != MAP_FAILED) {
        code = reg(at, length, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
        CUdeviceptr d = 0;
        if (code == CUDA_SUCCESS && device_view && device_view(&d, at, 0) == CUDA_SUCCESS)
            view = d;
    } else {
        code = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&x->s->mu);
    if (code == CUDA_SUCCESS)
        b->at = at; /* the guest's now: copies find it */
    else
        unlink_block(x, b);
    pthread_mutex_unlock(&x->s->mu);
    if (fd >= 0)
        close(fd);
    if (code == CUDA_SUCCESS) {
        vgpu_debug("executor: the guest's page-locked block of %llu bytes shared and registered%s",
                   (unsigned long long)length, view == guest ? ", its device view at its address" : "");
        return reply(x, code, &view);
    }
    /* A mapping at a fixed address that failed may have taken the
     * window's reservation there with it: made again. */
    if (same && pin != VGPU_EXEC_PIN_REFUSED)
        unmap_block(x, (void *)(uintptr_t)guest, length);
    else if (at != MAP_FAILED && fd >= 0)
        munmap(at, length);
    free(b);
    if (pin == VGPU_EXEC_PIN_GRANTED)
        vgpu_exec_unpin(length);
    vgpu_debug("executor: %llu bytes of the guest's page-locked memory not shared: %d", (unsigned long long)length,
               code);
    return reply(x, code, &view);
}

int vgpu_exec_share(struct vgpu_exec *x, const void *req, size_t len)
{
    struct vgpu_remote_share rq;
    if (len != sizeof(rq))
        return vgpu_exec_malformed("SHARE", len);
    memcpy(&rq, req, sizeof(rq));
    uint64_t guest = rq.guest, length = rq.length, view = 0;
    /* Over a channel, the block is in the bulk, mapped already: no memfd. */
    int fd = x->bulk.fd >= 0 ? -3 : take_memfd(x, length);
    if (fd == -1)
        return VGPU_EXEC_CLOSE;
    if (fd == -2)
        return reply(x, x->lib->not_supported, &view);
    return share_block(x, fd, guest, length);
}

int vgpu_exec_unshare(struct vgpu_exec *x, const void *req, size_t len)
{
    struct vgpu_remote_unshare rq;
    if (len != sizeof(rq))
        return vgpu_exec_malformed("UNSHARE", len);
    memcpy(&rq, req, sizeof(rq));
    uint64_t guest = rq.guest;
    pthread_mutex_lock(&x->s->mu);
    struct vgpu_exec_shared **at = &x->s->shared;
    while (*at && ((*at)->guest != guest || !(*at)->at)) /* one being shared is not the guest's yet */
        at = &(*at)->next;
    struct vgpu_exec_shared *b = *at;
    if (b)
        *at = b->next;
    pthread_mutex_unlock(&x->s->mu);
    if (!b)
        return reply(x, CUDA_ERROR_INVALID_VALUE, NULL);
    CUresult (*unreg)(void *) = (CUresult(*)(void *))vgpu_exec_function_named(x, "cuMemHostUnregister");
    int code = unreg ? unreg(b->at) : CUDA_SUCCESS;
    unmap_block(x, b->at, b->length); /* kept reserved, never the executor's again (above) */
    vgpu_exec_unpin(b->length);
    free(b);
    return reply(x, code, NULL);
}
