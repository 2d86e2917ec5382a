/*
 * Contexts the program creates (cuCtxCreate, cuCtxDestroy) and what every
 * context takes: device memory for a device's contexts, an id (cuCtxGetId), and a
 * synchronisation waits for its device.  Destroyed contexts are marked
 * dead, never freed, so a stale handle is detected instead of read after
 * free.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdlib.h>
#include <string.h>

int fake_ctx_valid(CUcontext ctx)
{
    return ctx && ctx->magic == CTX_MAGIC && __atomic_load_n(&ctx->alive, __ATOMIC_ACQUIRE);
}

/*
 * A device's contexts in this process: the first takes ctx_overhead (the
 * driver's per-process state comes with it), each further one ctx_extra,
 * as the H100 shows.  Called with fake_lock held; 0, or -1 when out of memory.
 * Owned by this file, under fake_lock.
 */
static int g_live_contexts[FAKEGPU_MAX_DEVICES];

int fake_context_added_locked(int dev)
{
    const struct fakegpu_config *c = fakegpu_config();
    if (fake_charge(dev, g_live_contexts[dev] ? c->ctx_extra : c->ctx_overhead) != 0)
        return -1;
    g_live_contexts[dev]++;
    return 0;
}

void fake_context_gone_locked(struct CUctx_st *ctx)
{
    const struct fakegpu_config *c = fakegpu_config();
    int dev = ctx->device;
    fake_free_context_allocs_locked(ctx);
    fake_uncharge(dev, ctx->limit_charged);
    ctx->limit_charged = 0;
    memset(ctx->limit, 0, sizeof(ctx->limit));
    fake_uncharge(dev, --g_live_contexts[dev] ? c->ctx_extra : c->ctx_overhead);
}

unsigned long long fake_new_context_id(void)
{
    static unsigned long long ids; /* atomic: the ids given */
    return __atomic_add_fetch(&ids, 1, __ATOMIC_RELAXED);
}

/* sm_count: the SMs its execution affinity gives it (0: all of them). */
static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev, int sm_count)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (fake_ctx_stack_full())
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUctx_st *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    int full = fake_context_added_locked(dev);
    UNLOCK();
    if (full) {
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c->magic = CTX_MAGIC;
    c->device = dev;
    c->refcount = 1;
    c->flags = flags;
    c->sm_count = sm_count ? sm_count : SM_COUNT;
    c->alive = 1;
    c->id = fake_new_context_id();
    fake_push_ctx(c);
    *pctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    ENTER();
    return ctx_create(pctx, flags, dev, 0);
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    ENTER();
    return ctx_create(pctx, flags, dev, 0);
}

/* Execution affinity: an SM count of 1 to all of them, each type at most once. */
static CUresult ctx_create_affine(CUcontext *pctx, const CUexecAffinityParam *params, int n, unsigned int flags,
                                  CUdevice dev)
{
    int sm_count = 0;
    if (n < 0 || (n && !params))
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < n; i++) {
        if (params[i].type != CU_EXEC_AFFINITY_TYPE_SM_COUNT || sm_count)
            return CUDA_ERROR_INVALID_VALUE;
        unsigned v = params[i].param.smCount.val;
        if (v == 0 || v > SM_COUNT)
            return CUDA_ERROR_INVALID_VALUE;
        sm_count = (int)v;
    }
    return ctx_create(pctx, flags, dev, sm_count);
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,
                        CUdevice dev)
{
    ENTER();
    return ctx_create_affine(pctx, paramsArray, numParams, flags, dev);
}

/* A CUDA-in-graphics context needs a graphics API's queue: the fake has none. */
CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev)
{
    ENTER();
    if (!ctxCreateParams)
        return ctx_create(pctx, flags, dev, 0);
    if (ctxCreateParams->cigParams)
        return CUDA_ERROR_NOT_SUPPORTED;
    return ctx_create_affine(pctx, ctxCreateParams->execAffinityParams, ctxCreateParams->numExecAffinityParams, flags,
                             dev);
}

CUresult cuCtxGetExecAffinity(CUexecAffinityParam *pExecAffinity, CUexecAffinityType type)
{
    ENTER();
    if (!pExecAffinity || type != CU_EXEC_AFFINITY_TYPE_SM_COUNT)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx = fake_current_ctx();
    if (!fake_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    pExecAffinity->type = type;
    pExecAffinity->param.smCount.val = (unsigned)(ctx->sm_count ? ctx->sm_count : SM_COUNT);
    return CUDA_SUCCESS;
}

static CUresult ctx_destroy(CUcontext ctx)
{
    if (!fake_ctx_valid(ctx) || ctx->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_timeline_drain(ctx->device);
    LOCK();
    int was_alive = __atomic_exchange_n(&ctx->alive, 0, __ATOMIC_ACQ_REL);
    if (was_alive)
        fake_context_gone_locked(ctx);
    UNLOCK();
    if (!was_alive)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_forget_ctx(ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    ENTER();
    return ctx_destroy(ctx);
}

CUresult cuCtxDestroy(CUcontext ctx)
{
    ENTER();
    return ctx_destroy(ctx);
}

/* Every stream of the device: this process's whole queue there. */
static CUresult ctx_synchronize(CUcontext ctx)
{
    if (!ctx)
        ctx = fake_current_ctx();
    if (!fake_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    CUresult rc = fake_capture_unsafe_call();
    if (rc != CUDA_SUCCESS)
        return rc;
    fake_timeline_drain(ctx->device);
    fake_trim_pools(ctx->device);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    ENTER();
    CUcontext c = ctx ? ctx : fake_current_ctx();
    if (!ctxId)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_ctx_valid(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    *ctxId = c->id;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    ENTER();
    return ctx_synchronize(NULL);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    ENTER();
    return ctx_synchronize(ctx);
}
