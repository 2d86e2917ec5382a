/*
 * Launches, the executor's side (the guest's: forwarder/remote/guest/cuda/launch.c;
 * the messages: forwarder/remote/spec/cuda.remote).  The function or kernel
 * and the stream are the guest's (the generated parse checks them), the
 * parameters exactly as many and as long as the driver says the kernel's
 * are, and a cuLaunchKernelEx attribute either plain data or an event the
 * guest was given.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <string.h>

/* A launch's parameters as the driver takes them: pointers to each, in the
 * request's buffer (8-aligned: each is padded to 8), by vgpu_exec_params_of
 * (calls.h), which a graph's kernel node's are taken by too (graphs/). */
_Static_assert(VGPU_EXEC_MAX_PARAMS == VGPU_IN_cuLaunchKernel_count_MAX, "a launch's parameters: one bound");
struct params {
    void *p[VGPU_IN_cuLaunchKernel_count_MAX];
};

int vgpu_exec_params_of(struct vgpu_exec *x, CUfunction f, uint32_t count, const uint32_t *sizes, const void *bytes,
                        size_t len, const char *call, void **out)
{
    size_t at = 0;
    for (unsigned i = 0; i < count; i++) {
        size_t padded = ((size_t)sizes[i] + 7) & ~(size_t)7;
        if (sizes[i] > 4096 || len - at < padded)
            return vgpu_exec_malformed(call, len);
        out[i] = (char *)bytes + at;
        at += padded;
    }
    if (at != len)
        return vgpu_exec_malformed(call, len);
    /* The driver reads f's parameters at their own sizes: they must be what was sent. */
    if (!vgpu_exec_params_match(x, (uint64_t)(uintptr_t)f, count, sizes))
        return CUDA_ERROR_INVALID_VALUE;
    return 0;
}

int vgpu_exec_cuLaunchKernel(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuLaunchKernel *in)
{
    struct params p;
    int r = vgpu_exec_params_of(x, in->f, in->count, in->sizes, in->params, in->params_size, "cuLaunchKernel", p.p);
    if (r == VGPU_EXEC_CLOSE)
        return r;
    if (r == 0)
        r = ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                          void **, void **))fn)(in->f, in->gridDimX, in->gridDimY, in->gridDimZ, in->blockDimX,
                                                in->blockDimY, in->blockDimZ, in->sharedMemBytes, in->hStream, p.p,
                                                NULL);
    return vgpu_exec_reply(x, r, NULL, 0);
}

int vgpu_exec_cuLaunchCooperativeKernel(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuLaunchKernel *in)
{
    struct params p;
    int r = vgpu_exec_params_of(x, in->f, in->count, in->sizes, in->params, in->params_size,
                                "cuLaunchCooperativeKernel", p.p);
    if (r == VGPU_EXEC_CLOSE)
        return r;
    if (r == 0)
        r = ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                          void **))fn)(in->f, in->gridDimX, in->gridDimY, in->gridDimZ, in->blockDimX, in->blockDimY,
                                       in->blockDimZ, in->sharedMemBytes, in->hStream, p.p);
    return vgpu_exec_reply(x, r, NULL, 0);
}

/* Whether attribute a may be passed on: its value plain data (a hint, a
 * shape, a flag), or an event the guest was given.  A value that points
 * into the guest's memory (a graph's device node) is refused. */
bool vgpu_exec_attribute_ok(const struct vgpu_exec *x, const CUlaunchAttribute *a)
{
    switch ((int)a->id) {
    case CU_LAUNCH_ATTRIBUTE_IGNORE:
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: /* an address range to cache: a hint, never dereferenced */
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: return true;
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
        return vgpu_exec_handle_known(x, (uint64_t)(uintptr_t)a->value.programmaticEvent.event, false);
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
        return vgpu_exec_handle_known(x, (uint64_t)(uintptr_t)a->value.launchCompletionEvent.event, false);
    default: return false;
    }
}

/* The launch config of a message that carries one's fields (designated
 * initializers), with the attributes copied out of it. */
#define CONFIG_OF(in, copied)                                                                                          \
    (CUlaunchConfig)                                                                                                   \
    {                                                                                                                  \
        .gridDimX = (in)->gridDimX, .gridDimY = (in)->gridDimY, .gridDimZ = (in)->gridDimZ,                            \
        .blockDimX = (in)->blockDimX, .blockDimY = (in)->blockDimY, .blockDimZ = (in)->blockDimZ,                      \
        .sharedMemBytes = (in)->sharedMemBytes, .hStream = (in)->hStream, .attrs = (in)->numAttrs ? (copied) : NULL,   \
        .numAttrs = (in)->numAttrs                                                                                     \
    }

/* The attributes, each a copy (the driver may read them after the request
 * buffer is reused), refused (*r) unless each may be passed on. */
static void attributes_of(const struct vgpu_exec *x, uint32_t n, const CUlaunchAttribute *in, CUlaunchAttribute *attrs,
                          int *r)
{
    *r = 0;
    for (unsigned i = 0; i < n; i++) {
        attrs[i] = in[i];
        if (!vgpu_exec_attribute_ok(x, &attrs[i]))
            *r = CUDA_ERROR_NOT_SUPPORTED;
    }
}

/* The attributes, then a launch as cuLaunchKernel's. */
int vgpu_exec_cuLaunchKernelEx(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuLaunchKernelEx *in)
{
    CUlaunchAttribute attrs[VGPU_IN_cuLaunchKernelEx_numAttrs_MAX];
    int r;
    attributes_of(x, in->numAttrs, in->attrs, attrs, &r);
    struct params p;
    int q = vgpu_exec_params_of(x, in->f, in->count, in->sizes, in->params, in->params_size, "cuLaunchKernelEx", p.p);
    if (q == VGPU_EXEC_CLOSE)
        return q;
    if (r == 0)
        r = q;
    if (r == 0) {
        CUlaunchConfig c = CONFIG_OF(in, attrs);
        r = ((CUresult(*)(const CUlaunchConfig *, CUfunction, void **, void **))fn)(&c, in->f, p.p, NULL);
    }
    return vgpu_exec_reply(x, r, NULL, 0);
}

/* A cluster query of the launch (how many fit, the largest): one value back. */
static int clusters(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuOccupancyMaxActiveClusters *in)
{
    CUlaunchAttribute attrs[VGPU_IN_cuOccupancyMaxActiveClusters_numAttrs_MAX];
    int r;
    attributes_of(x, in->numAttrs, in->attrs, attrs, &r);
    struct vgpu_out_cuOccupancyMaxActiveClusters out = { 0 };
    if (r == 0) {
        CUlaunchConfig c = CONFIG_OF(in, attrs);
        r = ((CUresult(*)(int *, CUfunction, const CUlaunchConfig *))fn)(&out.numClusters, in->func, &c);
    }
    return vgpu_exec_reply_cuOccupancyMaxActiveClusters(x, r, in, &out);
}

int vgpu_exec_cuOccupancyMaxActiveClusters(struct vgpu_exec *x, void *fn,
                                           const struct vgpu_in_cuOccupancyMaxActiveClusters *in)
{
    return clusters(x, fn, in);
}

int vgpu_exec_cuOccupancyMaxPotentialClusterSize(struct vgpu_exec *x, void *fn,
                                                 const struct vgpu_in_cuOccupancyMaxActiveClusters *in)
{
    return clusters(x, fn, in);
}
