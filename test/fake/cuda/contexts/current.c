/*
 * The current context: a stack per thread (cuCtxSetCurrent replaces its
 * top, cuCtxPushCurrent and cuCtxPopCurrent push and pop).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

/* Owned by this file: each thread's own stack. */
#define CTX_STACK_MAX 64
static __thread CUcontext tl_stack[CTX_STACK_MAX];
static __thread int tl_depth;

CUcontext fake_current_ctx(void)
{
    return tl_depth > 0 ? tl_stack[tl_depth - 1] : NULL;
}

/* Device of the current context, or -1. */
int fake_current_device(void)
{
    CUcontext ctx = fake_current_ctx();
    return fake_ctx_valid(ctx) ? ctx->device : -1;
}

/* Drops every occurrence of ctx from this thread's stack. */
void fake_forget_ctx(CUcontext ctx)
{
    int j = 0;
    for (int i = 0; i < tl_depth; i++)
        if (tl_stack[i] != ctx)
            tl_stack[j++] = tl_stack[i];
    tl_depth = j;
}

CUresult fake_push_ctx(CUcontext ctx)
{
    if (tl_depth >= CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    tl_stack[tl_depth++] = ctx;
    return CUDA_SUCCESS;
}

int fake_ctx_stack_full(void)
{
    return tl_depth >= CTX_STACK_MAX;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    ENTER();
    if (ctx && !fake_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx) {
        if (tl_depth > 0)
            tl_depth--;
    } else if (tl_depth > 0) {
        tl_stack[tl_depth - 1] = ctx;
    } else {
        fake_push_ctx(ctx);
    }
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    ENTER();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = fake_current_ctx();
    return CUDA_SUCCESS;
}

static CUresult ctx_push(CUcontext ctx)
{
    if (!fake_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return fake_push_ctx(ctx);
}

static CUresult ctx_pop(CUcontext *pctx)
{
    if (tl_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = tl_stack[--tl_depth];
    if (pctx)
        *pctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    ENTER();
    return ctx_push(ctx);
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
    ENTER();
    return ctx_push(ctx);
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    ENTER();
    return ctx_pop(pctx);
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    ENTER();
    return ctx_pop(pctx);
}

CUresult fake_ctx_device(CUdevice *device, CUcontext ctx)
{
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx)
        ctx = fake_current_ctx();
    if (!fake_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = ctx->device;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    ENTER();
    return fake_ctx_device(device, NULL);
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    ENTER();
    return fake_ctx_device(device, ctx);
}
