/*
 * Batches of memory operations on a stream (cuStreamBatchMemOp: waits on
 * and writes of values, barriers) and of decompressions
 * (cuMemBatchDecompressAsync), the executor's side; the guest's is
 * generated (the messages: forwarder/remote/spec/cuda.remote).  Each
 * operation's addresses are the guest's device memory, as a single
 * cuStreamWriteValue32's are, before the driver is given any of them (a
 * batch node's check, graphs/memory.c).
 */
#include "forwarder/remote/executor/cuda/calls.h"
#include "forwarder/remote/executor/cuda/graphs/graphs.h"

#include <stdlib.h>
#include <string.h>

static int mem_ops(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuStreamBatchMemOp *in, const char *call)
{
    /* A copy: the driver may read the array after the request buffer is reused. */
    CUstreamBatchMemOpParams ops[VGPU_IN_cuStreamBatchMemOp_count_MAX];
    memcpy(ops, in->paramArray, in->count * sizeof(*ops));
    int r = vgpu_exec_graph_ops(x, ops, in->count, call) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = ((CUresult(*)(CUstream, unsigned, CUstreamBatchMemOpParams *, unsigned))fn)(in->stream, in->count, ops,
                                                                                        in->flags);
    return vgpu_exec_reply(x, r, NULL, 0);
}

int vgpu_exec_cuStreamBatchMemOp(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuStreamBatchMemOp *in)
{
    return mem_ops(x, fn, in, "cuStreamBatchMemOp");
}

/* The other forms' messages are the same fields; each is its own type. */
#define SAME_AS_V1(form)                                                                                               \
    int vgpu_exec_##form(struct vgpu_exec *x, void *fn, const struct vgpu_in_##form *in)                               \
    {                                                                                                                  \
        _Static_assert(sizeof(*in) == sizeof(struct vgpu_in_cuStreamBatchMemOp), #form);                               \
        const struct vgpu_in_cuStreamBatchMemOp v1 = {                                                                 \
            .stream = in->stream, .count = in->count, .paramArray = in->paramArray, .flags = in->flags                 \
        };                                                                                                             \
        return mem_ops(x, fn, &v1, #form);                                                                             \
    }
SAME_AS_V1(cuStreamBatchMemOp_ptsz)
SAME_AS_V1(cuStreamBatchMemOp_v2)
SAME_AS_V1(cuStreamBatchMemOp_v2_ptsz)

/* Whether a decompression names only the guest's memory: its source, its
 * destination, and the word the driver writes the bytes it made into. */
static bool decompression_ok(struct vgpu_exec *x, const CUmemDecompressParams *p, const char *call)
{
    return vgpu_exec_device_range(x, (uint64_t)(uintptr_t)p->src, p->srcNumBytes, call) &&
           vgpu_exec_device_range(x, (uint64_t)(uintptr_t)p->dst, p->dstNumBytes, call) &&
           vgpu_exec_device_range(x, (uint64_t)(uintptr_t)p->dstActBytes, sizeof(cuuint32_t), call);
}

static int decompress(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemBatchDecompressAsync *in,
                      const char *call)
{
    CUmemDecompressParams *params = malloc((in->count ? in->count : 1) * sizeof(*params));
    if (!params)
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    memcpy(params, in->paramsArray, in->count * sizeof(*params));
    struct vgpu_out_cuMemBatchDecompressAsync out = { .errorIndex = SIZE_MAX };
    int r = CUDA_SUCCESS;
    for (size_t i = 0; i < in->count && r == CUDA_SUCCESS; i++)
        if (!decompression_ok(x, &params[i], call)) {
            r = CUDA_ERROR_INVALID_VALUE;
            out.errorIndex = i;
        }
    if (r == CUDA_SUCCESS)
        r = ((CUresult(*)(CUmemDecompressParams *, size_t, unsigned, size_t *, CUstream))fn)(
            params, in->count, in->flags, &out.errorIndex, in->stream);
    int sent = vgpu_exec_reply_cuMemBatchDecompressAsync(x, r, in, &out);
    free(params);
    return sent;
}

int vgpu_exec_cuMemBatchDecompressAsync(struct vgpu_exec *x, void *fn,
                                        const struct vgpu_in_cuMemBatchDecompressAsync *in)
{
    return decompress(x, fn, in, "cuMemBatchDecompressAsync");
}

int vgpu_exec_cuMemBatchDecompressAsync_ptsz(struct vgpu_exec *x, void *fn,
                                             const struct vgpu_in_cuMemBatchDecompressAsync_ptsz *in)
{
    _Static_assert(sizeof(*in) == sizeof(struct vgpu_in_cuMemBatchDecompressAsync), "the same fields");
    const struct vgpu_in_cuMemBatchDecompressAsync same = {
        .count = in->count, .paramsArray = in->paramsArray, .flags = in->flags, .stream = in->stream
    };
    return decompress(x, fn, &same, "cuMemBatchDecompressAsync_ptsz");
}
