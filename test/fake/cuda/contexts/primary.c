/*
 * Primary contexts (cuDevicePrimaryCtx*): one per device, retained and
 * released; at zero, or reset, what was allocated in it goes.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

/* Primary contexts live forever so their handles stay stable, as in the
 * real driver; created contexts are marked dead (never freed) on destroy so
 * a stale handle is detected instead of read after free. */
static struct CUctx_st g_primary[FAKEGPU_MAX_DEVICES];

static void init_primary_locked(int dev)
{
    struct CUctx_st *c = &g_primary[dev];
    if (c->magic != CTX_MAGIC) {
        c->magic = CTX_MAGIC;
        c->device = dev;
        c->primary = 1;
    }
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    ENTER();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    init_primary_locked(dev);
    struct CUctx_st *c = &g_primary[dev];
    if (c->refcount == 0) {
        if (fake_context_added_locked(dev) != 0)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            c->id = fake_new_context_id();
            __atomic_store_n(&c->alive, 1, __ATOMIC_RELEASE);
        }
    }
    if (rc == CUDA_SUCCESS) {
        c->refcount++;
        *pctx = c;
    }
    UNLOCK();
    return rc;
}

/* Called with fake_lock held. */
static void primary_destroy_locked(int dev)
{
    struct CUctx_st *c = &g_primary[dev];
    if (c->refcount > 0 || c->alive) {
        c->refcount = 0;
        __atomic_store_n(&c->alive, 0, __ATOMIC_RELEASE);
        fake_context_gone_locked(c);
    }
}

static CUresult primary_release(CUdevice dev)
{
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    fake_timeline_drain(dev); /* its memory may go: no kernel may still use it */
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    struct CUctx_st *c = &g_primary[dev];
    if (c->refcount <= 0)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if (--c->refcount == 0)
        primary_destroy_locked(dev);
    UNLOCK();
    return rc;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    ENTER();
    return primary_release(dev);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    ENTER();
    return primary_release(dev);
}

static CUresult primary_reset(CUdevice dev)
{
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    fake_timeline_drain(dev);
    LOCK();
    primary_destroy_locked(dev);
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    ENTER();
    return primary_reset(dev);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    ENTER();
    return primary_reset(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    ENTER();
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    *flags = g_primary[dev].flags;
    *active = g_primary[dev].refcount > 0;
    UNLOCK();
    return CUDA_SUCCESS;
}

static CUresult primary_set_flags(CUdevice dev, unsigned int flags)
{
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    init_primary_locked(dev);
    g_primary[dev].flags = flags;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    ENTER();
    return primary_set_flags(dev, flags);
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    ENTER();
    return primary_set_flags(dev, flags);
}
