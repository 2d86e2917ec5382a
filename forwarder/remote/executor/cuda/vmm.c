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
#include <string.h>

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
        pthread_mutex_lock(&x->s->mu);
        g->next = x->s->reserved;
        x->s->reserved = g;
        pthread_mutex_unlock(&x->s->mu);
    }
    return vgpu_exec_reply_cuMemAddressReserve(x, r, in, &out);
}

/* Only a range this guest reserved, whole. */
int vgpu_exec_cuMemAddressFree(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemAddressFree *in)
{
    /* Out of the guest's ranges first: no other lane reaches it while the driver frees it. */
    pthread_mutex_lock(&x->s->mu);
    struct vgpu_exec_range **at = &x->s->reserved;
    while (*at && ((*at)->base != in->ptr || (*at)->size != in->size))
        at = &(*at)->next;
    struct vgpu_exec_range *g = *at;
    if (g)
        *at = g->next;
    pthread_mutex_unlock(&x->s->mu);
    if (!g)
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    int r = ((CUresult(*)(CUdeviceptr, size_t))fn)(in->ptr, in->size);
    if (r == CUDA_SUCCESS) {
        free(g);
    } else { /* still the guest's */
        pthread_mutex_lock(&x->s->mu);
        g->next = x->s->reserved;
        x->s->reserved = g;
        pthread_mutex_unlock(&x->s->mu);
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

/* Sparse arrays' tiles mapped to (or unmapped from) allocations: each
 * entry's array (or mipmapped array) the guest's; an allocation handle is
 * an integer of the driver's, as cuMemMap takes it. */
static int map_arrays(struct vgpu_exec *x, void *fn, uint32_t count, const CUarrayMapInfo *list, CUstream stream)
{
    CUarrayMapInfo infos[VGPU_IN_cuMemMapArrayAsync_count_MAX];
    memcpy(infos, list, count * sizeof(*infos));
    int r = CUDA_SUCCESS;
    for (uint32_t i = 0; i < count && r == CUDA_SUCCESS; i++) {
        const CUarrayMapInfo *m = &infos[i];
        uint64_t resource = m->resourceType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
                                ? (uint64_t)(uintptr_t)m->resource.mipmap
                                : (uint64_t)(uintptr_t)m->resource.array;
        if (!resource || !vgpu_exec_handle_known(x, resource, false))
            r = CUDA_ERROR_INVALID_HANDLE;
    }
    if (r == CUDA_SUCCESS)
        r = ((CUresult(*)(CUarrayMapInfo *, unsigned, CUstream))fn)(infos, count, stream);
    return vgpu_exec_reply(x, r, NULL, 0);
}

int vgpu_exec_cuMemMapArrayAsync(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemMapArrayAsync *in)
{
    return map_arrays(x, fn, in->count, in->mapInfoList, in->hStream);
}

int vgpu_exec_cuMemMapArrayAsync_ptsz(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemMapArrayAsync *in)
{
    return map_arrays(x, fn, in->count, in->mapInfoList, in->hStream);
}
