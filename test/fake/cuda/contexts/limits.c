/*
 * Context limits (cuCtxSetLimit, cuCtxGetLimit): the stack, the printf FIFO
 * and the malloc heap take device memory beyond their defaults; others are
 * accepted.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <string.h>

/* The defaults of the limits that reserve device memory. */
static const size_t limit_default[LIMITS] = { 1024, 1u << 20, 8u << 20 };

/* The device memory a context's limits reserve beyond their defaults: a
 * stack for every thread the device can hold at once, the printf FIFO and
 * the malloc heap. */
static unsigned long long limits_reserve(const size_t limit[LIMITS])
{
    unsigned long long bytes = 0;
    for (int k = 0; k < LIMITS; k++) {
        size_t v = limit[k] ? limit[k] : limit_default[k];
        if (v > limit_default[k])
            bytes += (v - limit_default[k]) * (k == LIMIT_STACK ? (unsigned long long)SM_COUNT * THREADS_PER_SM : 1);
    }
    return bytes;
}

static int limit_index(CUlimit limit)
{
    switch (limit) {
    case CU_LIMIT_STACK_SIZE: return LIMIT_STACK;
    case CU_LIMIT_PRINTF_FIFO_SIZE: return LIMIT_PRINTF;
    case CU_LIMIT_MALLOC_HEAP_SIZE: return LIMIT_HEAP;
    default: return -1;
    }
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    ENTER();
    CUcontext ctx = fake_current_ctx();
    if (!fake_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    int k = limit_index(limit);
    if (k < 0)
        return limit <= CU_LIMIT_PERSISTING_L2_CACHE_SIZE ? CUDA_SUCCESS : CUDA_ERROR_UNSUPPORTED_LIMIT;
    size_t want[LIMITS];
    memcpy(want, ctx->limit, sizeof(want));
    want[k] = k == LIMIT_STACK ? (value + 15) / 16 * 16 : value; /* the driver rounds the stack up */
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    unsigned long long now = limits_reserve(want);
    if (now > ctx->limit_charged && fake_charge(ctx->device, now - ctx->limit_charged) != 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else {
        if (now < ctx->limit_charged)
            fake_uncharge(ctx->device, ctx->limit_charged - now);
        ctx->limit_charged = now;
        memcpy(ctx->limit, want, sizeof(want));
    }
    UNLOCK();
    return rc;
}

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    ENTER();
    CUcontext ctx = fake_current_ctx();
    if (!pvalue)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    int k = limit_index(limit);
    *pvalue = k < 0 ? 0 : ctx->limit[k] ? ctx->limit[k] : limit_default[k];
    return CUDA_SUCCESS;
}
