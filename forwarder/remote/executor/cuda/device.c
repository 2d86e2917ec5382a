/*
 * What a device and the driver say that needs more than a generated call,
 * the executor's side (the guest's: forwarder/remote/guest/cuda/device.c;
 * the messages: forwarder/remote/spec/cuda.remote): a device's SMs split
 * into groups for green contexts, and the driver's logs.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <stdlib.h>
#include <string.h>

/* The groups into an array of the room the guest has (none: only the count). */
int vgpu_exec_cuDevSmResourceSplitByCount(struct vgpu_exec *x, void *fn,
                                          const struct vgpu_in_cuDevSmResourceSplitByCount *in)
{
    CUdevResource *groups = in->room ? calloc(in->room, sizeof(*groups)) : NULL;
    if (in->room && !groups)
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    struct vgpu_out_cuDevSmResourceSplitByCount out = { .nbGroups = in->room, .result = groups };
    int r = ((CUresult(*)(CUdevResource *, unsigned *, const CUdevResource *, CUdevResource *, unsigned, unsigned))fn)(
        groups, &out.nbGroups, &in->input, &out.remaining, in->useFlags, in->minCount);
    if (r == CUDA_SUCCESS && in->room && out.nbGroups > in->room)
        r = CUDA_ERROR_INVALID_VALUE; /* the driver never writes more groups than it was given room for */
    int sent = vgpu_exec_reply_cuDevSmResourceSplitByCount(x, r, in, &out);
    free(groups);
    return sent;
}

/* The logs into a buffer of the size the guest has, NUL-ended. */
int vgpu_exec_cuLogsDumpToMemory(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuLogsDumpToMemory *in)
{
    char *buffer = calloc(1, in->size + 1);
    if (!buffer)
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    CUlogIterator it = in->iterator;
    size_t size = in->size;
    int r = ((CUresult(*)(CUlogIterator *, char *, size_t *, unsigned))fn)(&it, buffer, &size, in->flags);
    size_t n = strnlen(buffer, in->size);
    struct vgpu_out_cuLogsDumpToMemory out = {
        .iterator_out = it, .size_out = size, .length = r == CUDA_SUCCESS ? n + (n < in->size) : 0, .buffer = buffer
    };
    int sent = vgpu_exec_reply_cuLogsDumpToMemory(x, r, in, &out);
    free(buffer);
    return sent;
}
