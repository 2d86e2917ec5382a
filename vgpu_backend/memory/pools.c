/*
 * Stream-ordered allocations (cuMemAllocAsync, cuMemAllocFromPoolAsync) are
 * counted by what their pool reserves on the device, not block by block: a
 * freed block stays in the pool until the pool is trimmed (explicitly, or
 * at a synchronisation, past its release threshold), and the quota must
 * bound the device memory really in use.  Each pool's reserve is read
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) after each allocation from it,
 * after a trim, and before the quota refuses anything.
 */
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_backend/memory/quota.h"
#include "vgpu_cuda_slots.h"

#include <pthread.h>

#define MAX_POOLS 256

struct pool {
    CUmemoryPool pool;
    int vdev;
    uint64_t counted; /* bytes of its reserve the quota holds */
};

/* The pools this process allocated from; guarded by lock. */
static struct pool pools[MAX_POOLS];
static int npools;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static CUmemoryPool pool_of(CUmemoryPool pool, CUdevice dev)
{
    if (!pool && VGPU_REAL_CUDA(cuDeviceGetMemPool)(&pool, dev) != CUDA_SUCCESS)
        return NULL;
    return pool;
}

static uint64_t attribute(CUmemoryPool pool, CUmemPool_attribute a)
{
    cuuint64_t v = 0;
    return VGPU_REAL_CUDA(cuMemPoolGetAttribute)(pool, a, &v) == CUDA_SUCCESS ? v : 0;
}

/* The pool's idle reserve is reused first. */
uint64_t vgpu_pool_growth(CUmemoryPool pool, CUdevice dev, uint64_t bytes)
{
    pool = pool_of(pool, dev);
    if (!pool)
        return bytes;
    uint64_t reserved = attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    uint64_t used = attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    uint64_t idle = reserved > used ? reserved - used : 0;
    return bytes > idle ? bytes - idle : 0;
}

/* Brings p's count to its reserve now; called with lock held. */
static void resync(struct vgpu_self *self, struct pool *p, bool destroyed)
{
    uint64_t now = destroyed ? 0 : attribute(p->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    vgpu_bar0_recount(&self->bar0, p->vdev, p->counted, now);
    p->counted = now;
}

static struct pool *find(CUmemoryPool pool)
{
    for (int i = 0; i < npools; i++)
        if (pools[i].pool == pool)
            return &pools[i];
    return NULL;
}

void vgpu_pool_settle(struct vgpu_self *self, CUmemoryPool pool, CUdevice dev, int vdev)
{
    pool = pool_of(pool, dev);
    if (!pool)
        return;
    pthread_mutex_lock(&lock);
    struct pool *p = find(pool);
    if (!p && npools < MAX_POOLS) {
        p = &pools[npools++];
        *p = (struct pool){ .pool = pool, .vdev = vdev };
        vgpu_quota_add_recount(vgpu_pools_resync_all); /* a reserve to count before the quota refuses */
    }
    if (p)
        resync(self, p, false);
    else
        vgpu_warn("more than %d memory pools; allocations from the others are not counted", MAX_POOLS);
    pthread_mutex_unlock(&lock);
}

void vgpu_pools_resync_all(struct vgpu_self *self)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < npools; i++)
        resync(self, &pools[i], false);
    pthread_mutex_unlock(&lock);
}

void vgpu_backend_pool_changed(CUmemoryPool pool, bool destroyed)
{
    struct vgpu_self *self = vgpu_self_on();
    if (!self)
        return;
    pthread_mutex_lock(&lock);
    struct pool *p = find(pool);
    if (p) {
        resync(self, p, destroyed);
        if (destroyed)
            *p = pools[--npools];
    }
    pthread_mutex_unlock(&lock);
}
