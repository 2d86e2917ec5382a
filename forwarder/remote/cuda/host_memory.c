/*
 * Page-locked and registered host memory, answered in the guest: the
 * guest's memory can never be the host GPU's to reach, so it is plain
 * memory here, which the copies carry as they carry any (docs/remote.md).
 * A block asked for as mapped (CU_MEMHOSTALLOC_DEVICEMAP, which the runtime
 * asks for whenever addresses are unified) is given, and its "device
 * address" is its own, as with unified addressing; but no kernel can read
 * guest memory: one that reads a mapped block directly fails.  Blocks and registrations are remembered,
 * so that freeing or unregistering anything else fails as it does on the
 * driver.
 */
#include "forwarder/remote/client.h"
#include "forwarder/remote/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdlib.h>

/* Owned by this file, under host_lock. */
struct host_block {
    struct host_block *next;
    void *p;
    size_t n;
    unsigned flags;
    bool registered; /* cuMemHostRegister's (the caller's memory), not ours */
};
static struct host_block *host_blocks;
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A child of fork may find the lock held by a thread it does not have; its
 * blocks are its own copies of the parent's, at the same addresses, and
 * stay known. */
static void child_after_fork(void)
{
    pthread_mutex_init(&host_lock, NULL);
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
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
    while (*at && ((*at)->p != p || (*at)->registered != registered))
        at = &(*at)->next;
    return at;
}

static CUresult remember(void *p, size_t n, unsigned flags, bool registered)
{
    struct host_block *b = malloc(sizeof(*b));
    if (!b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *b = (struct host_block){ .p = p, .n = n, .flags = flags, .registered = registered };
    lock_blocks();
    b->next = host_blocks;
    host_blocks = b;
    pthread_mutex_unlock(&host_lock);
    return CUDA_SUCCESS;
}

static CUresult host_alloc(void **pp, size_t n, unsigned flags)
{
    if (!pp || !n)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    if (posix_memalign(&p, 4096, n) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = remember(p, n, flags, false);
    if (r != CUDA_SUCCESS) {
        free(p);
        return r;
    }
    *pp = p;
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
    free(b->p);
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
    return known ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : remember(p, n, flags, true);
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
    bool mapped = b && (b->registered ? b->flags & CU_MEMHOSTREGISTER_DEVICEMAP : b->flags & CU_MEMHOSTALLOC_DEVICEMAP);
    pthread_mutex_unlock(&host_lock);
    if (!mapped)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

bool vgpu_remote_host_block(const void *p, void **base, size_t *size, bool *mapped)
{
    lock_blocks();
    const struct host_block *b = containing(p);
    if (b) {
        *base = b->p;
        *size = b->n;
        *mapped = b->registered ? b->flags & CU_MEMHOSTREGISTER_DEVICEMAP : b->flags & CU_MEMHOSTALLOC_DEVICEMAP;
    }
    pthread_mutex_unlock(&host_lock);
    return b != NULL;
}
