/*
 * Launches, the executor's side (the guest's: forwarder/remote/guest/cuda/launch.c;
 * what crosses: docs/design/remote.md).  The function or kernel and the stream are
 * the guest's, the parameters exactly as many and as long as the driver
 * says the kernel's are, and a cuLaunchKernelEx attribute either plain data
 * or an event the guest was given.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include "forwarder/remote/transport/wire.h"

#include <string.h>

/* A launch as it crosses: words f, the grid (3), the block (3), shared
 * memory, stream, the count n; n sizes; the parameters, each padded to 8. */
struct launch {
    uint64_t f, stream;
    unsigned dim[7];
    unsigned n;
    void *params[VGPU_EXEC_MAX_PARAMS];
};

/* 0 with *l filled; VGPU_EXEC_CLOSE (malformed), or the code to reply. */
static int parse(struct vgpu_exec *x, const void *req, size_t len, const char *call, struct launch *l)
{
    memset(l, 0, sizeof(*l));
    if (len < 80 || vgpu_exec_word(req, 9) > VGPU_EXEC_MAX_PARAMS || len < (10 + vgpu_exec_word(req, 9)) * 8)
        return vgpu_exec_malformed(call, len);
    l->n = (unsigned)vgpu_exec_word(req, 9);
    size_t at = (10 + l->n) * 8;
    uint64_t sizes[VGPU_EXEC_MAX_PARAMS];
    for (unsigned i = 0; i < l->n; i++) {
        sizes[i] = vgpu_exec_word(req, 10 + i);
        size_t padded = (sizes[i] + 7) & ~(size_t)7;
        if (sizes[i] > 4096 || at + padded > len)
            return vgpu_exec_malformed(call, len);
        l->params[i] = (char *)req + at; /* 8-aligned: the request buffer is malloc's, each parameter padded to 8 */
        at += padded;
    }
    if (at != len)
        return vgpu_exec_malformed(call, len);
    l->f = vgpu_exec_word(req, 0);
    l->stream = vgpu_exec_word(req, 8);
    for (int i = 0; i < 7; i++)
        l->dim[i] = (unsigned)vgpu_exec_word(req, 1 + i);
    if (!l->f || !vgpu_exec_handle_known(x, l->f, false) || !vgpu_exec_handle_known(x, l->stream, true))
        return CUDA_ERROR_INVALID_HANDLE;
    /* The driver reads f's parameters at their own sizes: they must be what was sent. */
    if (!vgpu_exec_params_match(x, l->f, l->n, sizes))
        return CUDA_ERROR_INVALID_VALUE;
    return 0;
}

int vgpu_exec_cuLaunchKernel(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    struct launch l;
    int r = parse(x, req, len, "cuLaunchKernel", &l);
    if (r == VGPU_EXEC_CLOSE)
        return r;
    if (r == 0)
        r = ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                          void **, void **))fn)((CUfunction)(uintptr_t)l.f, l.dim[0], l.dim[1], l.dim[2], l.dim[3],
                                                l.dim[4], l.dim[5], l.dim[6], (CUstream)(uintptr_t)l.stream, l.params,
                                                NULL);
    return vgpu_exec_reply(x, r, NULL, 0);
}

int vgpu_exec_cuLaunchCooperativeKernel(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    struct launch l;
    int r = parse(x, req, len, "cuLaunchCooperativeKernel", &l);
    if (r == VGPU_EXEC_CLOSE)
        return r;
    if (r == 0)
        r = ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                          void **))fn)((CUfunction)(uintptr_t)l.f, l.dim[0], l.dim[1], l.dim[2], l.dim[3], l.dim[4],
                                       l.dim[5], l.dim[6], (CUstream)(uintptr_t)l.stream, l.params);
    return vgpu_exec_reply(x, r, NULL, 0);
}

/* Whether attribute a may be passed on: its value plain data (a hint, a
 * shape, a flag), or an event the guest was given.  A value that points
 * into the guest's memory (a graph's device node) is refused. */
static bool attribute_ok(const struct vgpu_exec *x, const CUlaunchAttribute *a)
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

#define MAX_ATTRS 16

/* [count][id, 8 words of value]...: the attributes, refused (*r) unless
 * each may be passed on; how many bytes they took, or 0 when malformed. */
static size_t parse_attrs(const struct vgpu_exec *x, const void *req, size_t len, CUlaunchAttribute *attrs, unsigned *n,
                          int *r)
{
    if (len < 8 || vgpu_exec_word(req, 0) > MAX_ATTRS || len < (1 + vgpu_exec_word(req, 0) * 9) * 8)
        return 0;
    *n = (unsigned)vgpu_exec_word(req, 0);
    memset(attrs, 0, MAX_ATTRS * sizeof(*attrs));
    *r = 0;
    for (unsigned i = 0; i < *n; i++) {
        attrs[i].id = (CUlaunchAttributeID)vgpu_exec_word(req, 1 + i * 9);
        memcpy(&attrs[i].value, (const char *)req + (2 + i * 9) * 8, 64);
        if (!attribute_ok(x, &attrs[i]))
            *r = CUDA_ERROR_NOT_SUPPORTED;
    }
    return (1 + (size_t)*n * 9) * 8;
}

static CUlaunchConfig config_of(const unsigned dim[7], uint64_t stream, CUlaunchAttribute *attrs, unsigned n)
{
    return (CUlaunchConfig){
        .gridDimX = dim[0],
        .gridDimY = dim[1],
        .gridDimZ = dim[2],
        .blockDimX = dim[3],
        .blockDimY = dim[4],
        .blockDimZ = dim[5],
        .sharedMemBytes = dim[6],
        .hStream = (CUstream)(uintptr_t)stream,
        .attrs = n ? attrs : NULL,
        .numAttrs = n,
    };
}

/* The attributes, then a launch as cuLaunchKernel's. */
int vgpu_exec_cuLaunchKernelEx(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    CUlaunchAttribute attrs[MAX_ATTRS];
    unsigned nattrs = 0;
    int r = 0;
    size_t skip = parse_attrs(x, req, len, attrs, &nattrs, &r);
    if (!skip)
        return vgpu_exec_malformed("cuLaunchKernelEx", len);
    struct launch l;
    int p = parse(x, (const char *)req + skip, len - skip, "cuLaunchKernelEx", &l);
    if (p == VGPU_EXEC_CLOSE)
        return p;
    if (r == 0)
        r = p;
    if (r == 0) {
        CUlaunchConfig c = config_of(l.dim, l.stream, attrs, nattrs);
        r = ((CUresult(*)(const CUlaunchConfig *, CUfunction, void **, void **))fn)(&c, (CUfunction)(uintptr_t)l.f,
                                                                                    l.params, NULL);
    }
    return vgpu_exec_reply(x, r, NULL, 0);
}

/* The attributes, then words f, the grid, the block, shared memory,
 * stream: how many clusters fit, one word back. */
int vgpu_exec_cuOccupancyMaxActiveClusters(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    CUlaunchAttribute attrs[MAX_ATTRS];
    unsigned nattrs = 0;
    int r = 0;
    size_t skip = parse_attrs(x, req, len, attrs, &nattrs, &r);
    if (!skip || len - skip != 9 * 8)
        return vgpu_exec_malformed("cuOccupancyMaxActiveClusters", len);
    const char *w = (const char *)req + skip;
    uint64_t f = vgpu_exec_word(w, 0), stream = vgpu_exec_word(w, 8);
    unsigned dim[7];
    for (int i = 0; i < 7; i++)
        dim[i] = (unsigned)vgpu_exec_word(w, 1 + i);
    if (r == 0 && (!f || !vgpu_exec_handle_known(x, f, false) || !vgpu_exec_handle_known(x, stream, true)))
        r = CUDA_ERROR_INVALID_HANDLE;
    int clusters = 0;
    if (r == 0) {
        CUlaunchConfig c = config_of(dim, stream, attrs, nattrs);
        r = ((CUresult(*)(int *, CUfunction, const CUlaunchConfig *))fn)(&clusters, (CUfunction)(uintptr_t)f, &c);
    }
    uint64_t out = (uint64_t)(int64_t)clusters;
    struct iovec v = { &out, r == 0 ? sizeof(out) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}
