/*
 * Launches, the guest's side (forwarder/remote/executor/cuda/launch.c is the
 * other; the messages: forwarder/remote/spec/cuda.remote): a kernel's
 * parameters packed by the sizes the executor's driver gives for it, sent
 * without waiting; and host functions, which run in the guest.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/cache.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/transport/wire.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

/* A kernel's parameters, learnt from the executor (cuFuncGetParamInfo, or
 * cuKernelGetParamInfo for a library's kernel): how many, and where each
 * lies in the kernel's parameter buffer and how long it is.  Each is of the generation it was learnt in (cache.h): a context
 * reset or a module unloaded may give a function's address to another,
 * so an older one is never used, and goes at the next learning.  Owned by
 * this file, under params_lock; callers get copies. */
#define MAX_PARAMS 256
/* No parameter lies further into the buffer (CUDA's is 32 KiB at most). */
#define MAX_PARAM_END (64u << 10)
struct param {
    uint32_t offset, size;
};
struct layout {
    struct layout *next;
    uint64_t gen;
    CUfunction f;
    unsigned n;
    struct param p[];
};
static struct layout *layouts;
static pthread_mutex_t params_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A child of fork may find the lock held by a thread it does not have; its
 * executor is another process, whose functions are not the parent's: it
 * starts with no layouts. */
static void child_after_fork(void)
{
    pthread_mutex_init(&params_lock, NULL);
    layouts = NULL; /* the parent's: left, not freed */
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

/* f's parameter count in *n and where each is in p[]. */
static CUresult layout_of(CUfunction f, unsigned *n, struct param p[MAX_PARAMS])
{
    pthread_once(&atfork_once, register_atfork);
    uint64_t gen = vgpu_remote_generation();
    pthread_mutex_lock(&params_lock);
    for (const struct layout *l = layouts; l; l = l->next)
        if (l->f == f && l->gen == gen) {
            *n = l->n;
            memcpy(p, l->p, l->n * sizeof(*p));
            pthread_mutex_unlock(&params_lock);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&params_lock);
    unsigned count = 0;
    for (; count < MAX_PARAMS; count++) {
        /* The remote driver's own (carried) calls; a library's kernel's
         * parameters are cuKernelGetParamInfo's. */
        size_t offset = 0, size = 0;
        CUresult r = vgpu_remote_is_kernel(f)
                         ? VGPU_REMOTE_CUDA(cuKernelGetParamInfo)((CUkernel)f, count, &offset, &size)
                         : VGPU_REMOTE_CUDA(cuFuncGetParamInfo)(f, count, &offset, &size);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break; /* past the last parameter */
        if (r != CUDA_SUCCESS)
            return r;
        if (size > 4096 || offset > MAX_PARAM_END)
            return CUDA_ERROR_INVALID_VALUE;
        p[count] = (struct param){ (uint32_t)offset, (uint32_t)size };
    }
    if (count == MAX_PARAMS)
        return CUDA_ERROR_INVALID_VALUE; /* more parameters than a launch may carry */
    *n = count;
    struct layout *made = malloc(sizeof(*made) + count * sizeof(*p));
    if (!made)
        return CUDA_SUCCESS; /* known for this launch, learnt again at the next */
    made->gen = gen;
    made->f = f;
    made->n = count;
    memcpy(made->p, p, count * sizeof(*p));
    pthread_mutex_lock(&params_lock);
    for (struct layout **at = &layouts; *at;) { /* the older generations' go */
        struct layout *old = *at;
        if (old->gen != vgpu_remote_generation()) {
            *at = old->next;
            free(old);
        } else {
            at = &old->next;
        }
    }
    made->next = layouts;
    layouts = made;
    pthread_mutex_unlock(&params_lock);
    return CUDA_SUCCESS;
}

/* extra's parameters (CU_LAUNCH_PARAM_BUFFER_POINTER, a buffer laid out as
 * the kernel's, and CU_LAUNCH_PARAM_BUFFER_SIZE, its size) as pointers to
 * each, from its offset; a buffer too short for them is refused, as the
 * driver refuses it, and a kernel with no parameters needs none. */
static CUresult params_of_buffer(void **extra, unsigned n, const struct param *p, void **params)
{
    const char *buffer = NULL;
    const size_t *size = NULL;
    for (unsigned i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (i >= 16)
            return CUDA_ERROR_INVALID_VALUE;
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            size = extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (n && (!buffer || !size))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n; i++) {
        if ((size_t)p[i].offset + p[i].size > *size)
            return CUDA_ERROR_INVALID_VALUE;
        params[i] = (void *)(buffer + p[i].offset);
    }
    return CUDA_SUCCESS;
}

/* A launch's parameters as they cross (struct vgpu_remote_params, manual.h:
 * each one's size, then their bytes, each padded to 8), whether they came
 * as an array (params) or as one buffer (extra); a graph's kernel node's
 * cross so too (graphs/nodes.c).  0 with out filled (its bytes malloc'd);
 * or the code to return. */
_Static_assert(VGPU_REMOTE_MAX_PARAMS == MAX_PARAMS, "a launch's parameters: one bound");

CUresult vgpu_remote_pack_params(CUfunction f, void **params, void **extra, struct vgpu_remote_params *out)
{
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned n = 0;
    struct param p[MAX_PARAMS];
    CUresult r = layout_of(f, &n, p);
    if (r != CUDA_SUCCESS)
        return r;
    void *from_buffer[MAX_PARAMS];
    if (extra && (r = params_of_buffer(extra, n, p, from_buffer)) != CUDA_SUCCESS)
        return r;
    if (extra)
        params = from_buffer;
    if (n && !params)
        return CUDA_ERROR_INVALID_VALUE;
    out->count = n;
    out->len = 0;
    for (unsigned i = 0; i < n; i++) {
        out->sizes[i] = p[i].size;
        out->len += (p[i].size + 7) & ~7u;
    }
    out->bytes = calloc(1, out->len ? out->len : 1);
    if (!out->bytes)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0, at = 0; i < n; at += (p[i].size + 7) & ~7u, i++)
        memcpy(out->bytes + at, params[i], p[i].size);
    return CUDA_SUCCESS;
}

/* cuLaunchKernel's message, to slot (a cooperative launch crosses as a
 * plain one, to its own call), sent without waiting. */
static CUresult send_launch(unsigned slot, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shmem, CUstream stream, void **params, void **extra)
{
    struct vgpu_remote_params p;
    CUresult r = vgpu_remote_pack_params(f, params, extra, &p);
    if (r != CUDA_SUCCESS)
        return r;
    struct vgpu_in_cuLaunchKernel in = {
        .f = f,
        .gridDimX = gx,
        .gridDimY = gy,
        .gridDimZ = gz,
        .blockDimX = bx,
        .blockDimY = by,
        .blockDimZ = bz,
        .sharedMemBytes = shmem,
        .hStream = stream,
        .count = p.count,
        .sizes = p.sizes,
        .params = p.bytes,
        .params_size = p.len,
    };
    r = (CUresult)vgpu_remote_send_cuLaunchKernel(slot, 0, &in);
    free(p.bytes);
    return r;
}

CUresult vgpu_remote_guest_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                          unsigned bz, unsigned shmem, CUstream stream, void **params, void **extra)
{
    return send_launch(SLOT(cuLaunchKernel), f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
}

/* The _ptsz forms. */
CUresult vgpu_remote_guest_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                               unsigned by, unsigned bz, unsigned shmem, CUstream stream, void **params,
                                               void **extra)
{
    return vgpu_remote_guest_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, vgpu_remote_per_thread(stream), params,
                                            extra);
}

CUresult vgpu_remote_guest_cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                                     unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                                                     void **params)
{
    return send_launch(SLOT(cuLaunchCooperativeKernel), f, gx, gy, gz, bx, by, bz, shmem, stream, params, NULL);
}

CUresult vgpu_remote_guest_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                          unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                                          CUstream stream, void **params)
{
    return vgpu_remote_guest_cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shmem, vgpu_remote_per_thread(stream),
                                                       params);
}

/* A launch's grid, block, shared memory and stream from its config, as the
 * messages that take a config name them (designated initializers). */
#define LAUNCH_SHAPE(c)                                                                                                \
    .gridDimX = (c)->gridDimX, .gridDimY = (c)->gridDimY, .gridDimZ = (c)->gridDimZ, .blockDimX = (c)->blockDimX,      \
    .blockDimY = (c)->blockDimY, .blockDimZ = (c)->blockDimZ, .sharedMemBytes = (c)->sharedMemBytes,                   \
    .hStream = (c)->hStream

/* A launch's attributes cross as they are; the executor takes those whose
 * values are plain data or events it gave (docs/design/remote.md). */
static bool attributes_carried(const CUlaunchConfig *config, unsigned slot, CUresult *r)
{
    if (!config || (config->numAttrs && !config->attrs)) {
        *r = CUDA_ERROR_INVALID_VALUE;
        return false;
    }
    if (config->numAttrs > VGPU_IN_cuLaunchKernelEx_numAttrs_MAX) {
        *r = vgpu_remote_refuse(slot);
        return false;
    }
    return true;
}

CUresult vgpu_remote_guest_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    CUresult r;
    if (!attributes_carried(config, SLOT(cuLaunchKernelEx), &r))
        return r;
    struct vgpu_remote_params p;
    if ((r = vgpu_remote_pack_params(f, params, extra, &p)) != CUDA_SUCCESS)
        return r;
    struct vgpu_in_cuLaunchKernelEx in = {
        .numAttrs = config->numAttrs,
        .attrs = config->attrs,
        .f = f,
        LAUNCH_SHAPE(config),
        .count = p.count,
        .sizes = p.sizes,
        .params = p.bytes,
        .params_size = p.len,
    };
    r = (CUresult)vgpu_remote_send_cuLaunchKernelEx(SLOT(cuLaunchKernelEx), 0, &in);
    free(p.bytes);
    return r;
}

/* A cluster query of the launch (cuOccupancyMaxActiveClusters's message,
 * to slot): one value back. */
static CUresult clusters(unsigned slot, int *value, CUfunction f, const CUlaunchConfig *config)
{
    CUresult r;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if (!attributes_carried(config, slot, &r))
        return r;
    struct vgpu_in_cuOccupancyMaxActiveClusters in = {
        .numAttrs = config->numAttrs,
        .attrs = config->attrs,
        .func = f,
        LAUNCH_SHAPE(config),
    };
    struct vgpu_out_cuOccupancyMaxActiveClusters out = { 0 };
    r = (CUresult)vgpu_remote_call_cuOccupancyMaxActiveClusters(slot, 0, &in, &out);
    if (r == CUDA_SUCCESS)
        *value = out.numClusters;
    return r;
}

/* How many clusters of the launch fit. */
CUresult vgpu_remote_guest_cuOccupancyMaxActiveClusters(int *numClusters, CUfunction f, const CUlaunchConfig *config)
{
    return clusters(SLOT(cuOccupancyMaxActiveClusters), numClusters, f, config);
}

/* The largest cluster the launch may have. */
CUresult vgpu_remote_guest_cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction f,
                                                              const CUlaunchConfig *config)
{
    return clusters(SLOT(cuOccupancyMaxPotentialClusterSize), clusterSize, f, config);
}

CUresult vgpu_remote_guest_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params,
                                                 void **extra)
{
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    CUlaunchConfig c = *config;
    c.hStream = vgpu_remote_per_thread(c.hStream);
    return vgpu_remote_guest_cuLaunchKernelEx(&c, f, params, extra);
}

/* Host functions run in the guest, whose memory they use: once the
 * stream's work before them is done (a synchronize), before the call
 * returns, so that work enqueued after them follows them.  In a stream
 * being captured they would be a graph's host node, which the host cannot
 * run: refused. */
static CUresult drain(unsigned slot, CUstream stream)
{
    CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = VGPU_REMOTE_CUDA(cuStreamIsCapturing)(stream, &capturing);
    if (r != CUDA_SUCCESS)
        return r;
    if (capturing != CU_STREAM_CAPTURE_STATUS_NONE)
        return vgpu_remote_refuse(slot);
    return VGPU_REMOTE_CUDA(cuStreamSynchronize)(stream);
}

CUresult vgpu_remote_guest_cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *data)
{
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = drain(SLOT(cuLaunchHostFunc), stream);
    if (r == CUDA_SUCCESS)
        fn(data);
    return r;
}

CUresult vgpu_remote_guest_cuLaunchHostFunc_ptsz(CUstream stream, CUhostFn fn, void *data)
{
    return vgpu_remote_guest_cuLaunchHostFunc(vgpu_remote_per_thread(stream), fn, data);
}

/* A callback learns the stream's error, as the driver gives it one; the
 * error (an earlier asynchronous call's, which the synchronize returned)
 * is the call's too, so that it is not lost.  A stream the executor does
 * not know gets no callback. */
CUresult vgpu_remote_guest_cuStreamAddCallback(CUstream stream, CUstreamCallback cb, void *data, unsigned flags)
{
    if (!cb || flags)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = drain(SLOT(cuStreamAddCallback), stream);
    if (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_INVALID_VALUE)
        return r;
    cb(stream, r, data);
    return r;
}

CUresult vgpu_remote_guest_cuStreamAddCallback_ptsz(CUstream stream, CUstreamCallback cb, void *data, unsigned flags)
{
    return vgpu_remote_guest_cuStreamAddCallback(vgpu_remote_per_thread(stream), cb, data, flags);
}
