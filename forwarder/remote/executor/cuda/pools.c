/*
 * Memory pools' attributes and the device's graph memory pool's, set: the
 * executor's side (the guest's: forwarder/remote/guest/cuda/pools.c; the
 * messages: forwarder/remote/spec/cuda.remote).  The value came as a word;
 * the driver reads it where it lies, at the attribute's own size (an int
 * is the word's low half, as the guest put it).
 */
#include "forwarder/remote/executor/cuda/calls.h"

int vgpu_exec_cuMemPoolSetAttribute(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemPoolSetAttribute *in)
{
    uint64_t word = in->word; /* an int attribute's value is its low half, as the get's reply's is */
    int r = ((CUresult(*)(CUmemoryPool, CUmemPool_attribute, void *))fn)(in->pool, in->attr, &word);
    return vgpu_exec_reply(x, r, NULL, 0);
}

int vgpu_exec_cuDeviceSetGraphMemAttribute(struct vgpu_exec *x, void *fn,
                                           const struct vgpu_in_cuDeviceSetGraphMemAttribute *in)
{
    cuuint64_t value = in->word;
    int r = ((CUresult(*)(CUdevice, CUgraphMem_attribute, void *))fn)(in->device, in->attr, &value);
    return vgpu_exec_reply(x, r, NULL, 0);
}
