/*
 * Virtual memory management, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/vmm.c; the messages: forwarder/remote/spec/
 * cuda.remote).  The address ranges a guest reserves are its own
 * (vgpu_exec_device_range accepts them, so that it may map, unmap, grant
 * access to and free them); the executor chooses where they are, never the
 * guest.  Properties cross as bytes,
 * with no Windows metadata.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include "common/log.h"

#include <stdlib.h>

int vgpu_exec_cuMemAddressReserve(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemAddressReserve *in)
{
    struct vgpu_out_cuMemAddressReserve out = { 0 };
    /* Where: the executor's choice (a requested address is a hint, not
     * honoured: the guest does not place ranges in the executor's space). */
    int r = ((CUresult(*)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long))fn)(
        &out.ptr, in->size, in->alignment, 0, in->flags);
    if (r == CUDA_SUCCESS) {
        struct vgpu_exec_range *g = malloc(sizeof(*g));
        if (!g) {
            vgpu_error("executor: out of memory for the guest's reserved ranges");
            exit(1);
        }
        g->base = out.ptr;
        g->size = in->size;
        g->next = x->reserved;
        x->reserved = g;
    }
    return vgpu_exec_reply_cuMemAddressReserve(x, r, in, &out);
}

/* Only a range this guest reserved, whole. */
int vgpu_exec_cuMemAddressFree(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemAddressFree *in)
{
    struct vgpu_exec_range **at = &x->reserved;
    while (*at && ((*at)->base != in->ptr || (*at)->size != in->size))
        at = &(*at)->next;
    if (!*at)
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    int r = ((CUresult(*)(CUdeviceptr, size_t))fn)(in->ptr, in->size);
    if (r == CUDA_SUCCESS) {
        struct vgpu_exec_range *g = *at;
        *at = g->next;
        free(g);
    }
    return vgpu_exec_reply(x, r, NULL, 0);
}

/* The properties, their Windows metadata cleared: a pointer of the guest's. */
static CUmemAllocationProp properties(const CUmemAllocationProp *in)
{
    CUmemAllocationProp prop = *in;
    prop.win32HandleMetaData = NULL;
    return prop;
}

int vgpu_exec_cuMemGetAllocationGranularity(struct vgpu_exec *x, void *fn,
                                            const struct vgpu_in_cuMemGetAllocationGranularity *in)
{
    CUmemAllocationProp prop = properties(&in->prop);
    struct vgpu_out_cuMemGetAllocationGranularity out = { 0 };
    int r = ((CUresult(*)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags))fn)(
        &out.granularity, &prop, in->option);
    return vgpu_exec_reply_cuMemGetAllocationGranularity(x, r, in, &out);
}

int vgpu_exec_cuMemCreate(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemCreate *in)
{
    CUmemAllocationProp prop = properties(&in->prop);
    struct vgpu_out_cuMemCreate out = { 0 };
    int r = ((CUresult(*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long))fn)(
        &out.handle, in->size, &prop, in->flags);
    return vgpu_exec_reply_cuMemCreate(x, r, in, &out);
}

/* The range must be the guest's. */
int vgpu_exec_cuMemSetAccess(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemSetAccess *in)
{
    if (!vgpu_exec_device_range(x, in->ptr, in->size ? in->size : 1, "cuMemSetAccess"))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    int r =
        ((CUresult(*)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t))fn)(in->ptr, in->size, in->desc, in->count);
    return vgpu_exec_reply(x, r, NULL, 0);
}
