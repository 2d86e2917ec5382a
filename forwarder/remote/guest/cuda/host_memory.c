/*
 * Page-locked and registered host memory, answered in the guest: the
 * guest's memory can never be the host GPU's to reach.  A page-locked block
 * is memory the guest shares with its executor where it can (a memfd the
 * executor maps and registers with its driver: vgpu_remote_share), so that
 * copies to and from it are the driver's DMA, as asynchronous as on a
 * local driver and allowed into graphs; else plain memory here, which the
 * copies carry as they carry any (docs/design/remote.md).  A block asked for as
 * mapped (CU_MEMHOSTALLOC_DEVICEMAP, which the runtime asks for whenever
 * addresses are unified) is given, and its "device address" is its own, as
 * with unified addressing; but no kernel can read guest memory: one that
 * reads a mapped block directly fails.  Blocks and registrations are
 * remembered, so that freeing or unregistering anything else fails as it
 * does on the driver.
 */
#define _GNU_SOURCE
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/transport/shm.h"

#include "common/log.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* How a block's memory was had. */
enum how { ALLOCATED, SHARED, MAPPED, REGISTERED };

/* Owned by this file, under host_lock. */
struct host_block {
    struct host_block *next;
    void *p;
    size_t n;
    size_t length;  /* SHARED, MAPPED: the mapping's (whole pages) */
    uint64_t view;  /* SHARED: its device address, as the executor's driver gives it (0: none) */
    bool in_window; /* SHARED, MAPPED: in the executor's window (vgpu_remote_window) */
    bool scratch;   /* nothing to keep across a fork (vgpu_remote_host_scratch) */
    unsigned flags;
    enum how how; /* ALLOCATED: posix_memalign's; SHARED: a memfd the executor maps too; MAPPED: a
                   * shared block's private copy in a child of fork; REGISTERED: cuMemHostRegister's
                   * (the caller's memory), not ours */
};
static struct host_block *host_blocks;
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* The free extents of the executor's window (sorted, coalesced), for the
 * window at window_base: owned by this file, under host_lock. */
struct extent {
    struct extent *next;
    uint64_t at, length;
};
static struct extent *window_free;
static uint64_t window_base;
static bool window_backed; /* a channel's bulk: blocks are its memory, never unmapped */

/* A fork waits for host_lock, so that the child's list is whole.  The
 * child's blocks are its own copies of the parent's, at the same
 * addresses, and stay known.  A shared block would be the parent's memory
 * still (and its executor's): it becomes a private copy, which the child's
 * copies carry in messages (one that cannot be copied stays shared with
 * the parent, but is no longer named to an executor as shared).  The
 * parent's window is given up but for those copies: the child's executor
 * offers its own, at the same addresses if they are free. */
static void before_fork(void)
{
    pthread_mutex_lock(&host_lock);
}

static void parent_after_fork(void)
{
    pthread_mutex_unlock(&host_lock);
}

static void child_after_fork(void)
{
    pthread_mutex_init(&host_lock, NULL);
    for (struct host_block *b = host_blocks; b; b = b->next) {
        b->in_window = false;
        if (b->how != SHARED)
            continue;
        b->how = MAPPED;
        void *copy = mmap(NULL, b->length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (copy == MAP_FAILED)
            continue;
        if (!b->scratch)
            memcpy(copy, b->p, b->length);
        if (mremap(copy, b->length, b->length, MREMAP_MAYMOVE | MREMAP_FIXED, b->p) == MAP_FAILED)
            munmap(copy, b->length);
    }
    while (window_free) {
        struct extent *e = window_free;
        window_free = e->next;
        munmap((void *)(uintptr_t)e->at, e->length);
        free(e);
    }
    window_base = 0;
}

static void register_atfork(void)
{
    pthread_atfork(before_fork, parent_after_fork, child_after_fork);
}

static void lock_blocks(void)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&host_lock);
}

/* The block starting at p (registered or not), or NULL; under host_lock. */
static struct host_block **find(const void *p, bool registered)
{
    struct host_block **at = &host_blocks;
    while (*at && ((*at)->p != p || ((*at)->how == REGISTERED) != registered))
        at = &(*at)->next;
    return at;
}

/* A block like like (its memory, how it was had), of n bytes asked for with flags. */
static CUresult remember(const struct host_block *like, size_t n, unsigned flags)
{
    struct host_block *b = malloc(sizeof(*b));
    if (!b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *b = *like;
    b->n = n;
    b->flags = flags;
    lock_blocks();
    b->next = host_blocks;
    host_blocks = b;
    pthread_mutex_unlock(&host_lock);
    return CUDA_SUCCESS;
}

/* Under host_lock: length bytes of the window (base, size), or 0 when
 * none are left in one piece. */
static uint64_t window_take(uint64_t base, uint64_t size, uint64_t length)
{
    if (window_base != base) { /* first use, or a child of fork's new window */
        while (window_free) {
            struct extent *e = window_free;
            window_free = e->next;
            free(e);
        }
        window_free = malloc(sizeof(*window_free));
        if (!window_free)
            return 0;
        *window_free = (struct extent){ .at = base, .length = size };
        window_base = base;
    }
    for (struct extent **at = &window_free; *at; at = &(*at)->next) {
        struct extent *e = *at;
        if (e->length < length)
            continue;
        uint64_t got = e->at;
        e->at += length;
        e->length -= length;
        if (!e->length) {
            *at = e->next;
            free(e);
        }
        return got;
    }
    return 0;
}

/* Under host_lock: length bytes at at back to the window, merged with
 * their neighbours. */
static void window_give(uint64_t at, uint64_t length)
{
    if (!window_base)
        return;
    struct extent *prev = NULL, *next = window_free;
    while (next && next->at < at) {
        prev = next;
        next = next->next;
    }
    if (prev && prev->at + prev->length == at) {
        prev->length += length;
        if (next && prev->at + prev->length == next->at) {
            prev->length += next->length;
            prev->next = next->next;
            free(next);
        }
    } else if (next && at + length == next->at) {
        next->at = at;
        next->length += length;
    } else {
        struct extent *e = malloc(sizeof(*e));
        if (!e)
            return; /* lost to the window, not to anything else */
        *e = (struct extent){ .next = next, .at = at, .length = length };
        if (prev)
            prev->next = e;
        else
            window_free = e;
    }
}

/* The addresses of a block that was in the window: inaccessible again,
 * and the window's to give out. */
static void window_return(void *p, size_t length)
{
    if (!window_backed && vgpu_shm_reserve(p, length) != 0)
        return;
    lock_blocks();
    window_give((uint64_t)(uintptr_t)p, length);
    pthread_mutex_unlock(&host_lock);
}

/* n bytes shared with the executor (whole pages: *length), or NULL where
 * it gives none (no context current yet, a driver that will not register
 * them, a socket-only executor of another kind): said once. */
static void *shared_alloc(size_t n, size_t *length, uint64_t *view, bool *in_window)
{
    static bool said;
    *length = (n + 4095) & ~(size_t)4095;
    uint64_t base, size, where = 0;
    bool backed = false;
    if (vgpu_remote_window(&base, &size, &backed)) {
        lock_blocks();
        where = window_take(base, size, *length);
        window_backed = backed;
        pthread_mutex_unlock(&host_lock);
    }
    *in_window = where != 0;
    int fd = -1, r = -1;
    void *p = backed ? (where ? (void *)(uintptr_t)where : MAP_FAILED)
                     : vgpu_shm_sealed("vgpu-page-locked", *length, (void *)(uintptr_t)where, &fd);
    if (p != MAP_FAILED) {
        r = vgpu_remote_share(p, *length, fd, view);
        if (fd >= 0)
            close(fd);
    }
    if (r == 0)
        return p;
    if (where)
        window_return((void *)(uintptr_t)where, *length);
    else if (p != MAP_FAILED)
        munmap(p, *length);
    if (__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
        return NULL;
    if (backed && !where)
        vgpu_info("remote GPU: page-locked memory past the channel's %llu KiB is not shared with the executor: "
                  "copies of it cross in messages, and none may be captured into a graph (said once)",
                  (unsigned long long)(size >> 10));
    else
        vgpu_info("remote GPU: page-locked memory is not shared with the executor (code %d): copies of it cross "
                  "in messages, and none may be captured into a graph (said once)",
                  r);
    return NULL;
}

/* Frees a block's memory (not the record). */
static void release(const struct host_block *b)
{
    if (b->how == SHARED)
        vgpu_remote_unshare(b->p);
    if (b->how == SHARED && b->in_window)
        window_return(b->p, b->length);
    else if (b->how == SHARED || b->how == MAPPED)
        munmap(b->p, b->length);
    else if (b->how == ALLOCATED)
        free(b->p);
}

static CUresult host_alloc(void **pp, size_t n, unsigned flags)
{
    if (!pp || !n)
        return CUDA_ERROR_INVALID_VALUE;
    size_t length = 0;
    uint64_t view = 0;
    bool in_window = false;
    void *p = shared_alloc(n, &length, &view, &in_window);
    struct host_block b = {
        .p = p, .length = length, .how = p ? SHARED : ALLOCATED, .view = view, .in_window = p && in_window
    };
    if (!p && posix_memalign(&b.p, 4096, n) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = remember(&b, n, flags);
    if (r != CUDA_SUCCESS) {
        release(&b);
        return r;
    }
    *pp = b.p;
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemAllocHost_v2(void **pp, size_t n)
{
    return host_alloc(pp, n, 0);
}

CUresult vgpu_remote_guest_cuMemAllocHost(void **pp, unsigned int n)
{
    return host_alloc(pp, n, 0);
}

CUresult vgpu_remote_guest_cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
    return host_alloc(pp, n, flags);
}

CUresult vgpu_remote_guest_cuMemFreeHost(void *p)
{
    lock_blocks();
    struct host_block **at = find(p, false), *b = *at;
    if (b)
        *at = b->next;
    pthread_mutex_unlock(&host_lock);
    if (!b)
        return CUDA_ERROR_INVALID_VALUE;
    release(b);
    free(b);
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
    if (!p || !n)
        return CUDA_ERROR_INVALID_VALUE;
    lock_blocks();
    bool known = *find(p, true) != NULL;
    pthread_mutex_unlock(&host_lock);
    struct host_block b = { .p = p, .how = REGISTERED };
    return known ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : remember(&b, n, flags);
}

CUresult vgpu_remote_guest_cuMemHostRegister(void *p, size_t n, unsigned int flags)
{
    return vgpu_remote_guest_cuMemHostRegister_v2(p, n, flags);
}

CUresult vgpu_remote_guest_cuMemHostUnregister(void *p)
{
    lock_blocks();
    struct host_block **at = find(p, true), *b = *at;
    if (b)
        *at = b->next;
    pthread_mutex_unlock(&host_lock);
    free(b);
    return b ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* The block p lies in, or NULL; under host_lock. */
static const struct host_block *containing(const void *p)
{
    const struct host_block *b = host_blocks;
    while (b && !((const char *)p >= (const char *)b->p && (size_t)((const char *)p - (const char *)b->p) < b->n))
        b = b->next;
    return b;
}

/* The flags of the block p lies in. */
CUresult vgpu_remote_guest_cuMemHostGetFlags(unsigned int *flags, void *p)
{
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    lock_blocks();
    const struct host_block *b = containing(p);
    if (b)
        *flags = b->flags;
    pthread_mutex_unlock(&host_lock);
    return b ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A mapped block's address, as under unified addressing (see above); any
 * other pointer is refused as the driver refuses one it did not map. */
CUresult vgpu_remote_guest_cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int flags)
{
    if (!pdptr || flags)
        return CUDA_ERROR_INVALID_VALUE;
    lock_blocks();
    const struct host_block *b = containing(p);
    bool mapped =
        b && (b->how == REGISTERED ? b->flags & CU_MEMHOSTREGISTER_DEVICEMAP : b->flags & CU_MEMHOSTALLOC_DEVICEMAP);
    uint64_t view = mapped && b->how == SHARED && b->view ? b->view + (uint64_t)((const char *)p - (const char *)b->p)
                                                          : (uint64_t)(uintptr_t)p;
    pthread_mutex_unlock(&host_lock);
    if (!mapped)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)view;
    return CUDA_SUCCESS;
}

bool vgpu_remote_host_block(const void *p, void **base, size_t *size, bool *mapped)
{
    lock_blocks();
    const struct host_block *b = containing(p);
    if (b) {
        *base = b->p;
        *size = b->n;
        *mapped = b->how == REGISTERED ? b->flags & CU_MEMHOSTREGISTER_DEVICEMAP : b->flags & CU_MEMHOSTALLOC_DEVICEMAP;
    }
    pthread_mutex_unlock(&host_lock);
    return b != NULL;
}

void vgpu_remote_host_scratch(const void *p)
{
    lock_blocks();
    struct host_block *b = *find(p, false);
    if (b)
        b->scratch = true;
    pthread_mutex_unlock(&host_lock);
}

bool vgpu_remote_host_shared(const void *p, size_t n)
{
    lock_blocks();
    const struct host_block *b = containing(p);
    bool in = b && b->how == SHARED && n <= b->n - (size_t)((const char *)p - (const char *)b->p);
    pthread_mutex_unlock(&host_lock);
    return in;
}
