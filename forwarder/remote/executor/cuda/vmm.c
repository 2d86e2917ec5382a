/*
 * Virtual memory management, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/vmm.c; what crosses: docs/design/remote.md).  The address
 * ranges a guest reserves are its own (vgpu_exec_device_range accepts them,
 * so that it may map, unmap, grant access to and free them); the executor
 * chooses where they are, never the guest.  Properties cross as bytes,
 * with no Windows metadata.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include "common/log.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ACCESS 64

int vgpu_exec_cuMemAddressReserve(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len != 32)
        return vgpu_exec_malformed("cuMemAddressReserve", len);
    CUdeviceptr p = 0;
    size_t size = vgpu_exec_word(req, 0);
    /* Where: the executor's choice (a requested address is a hint, not
     * honoured: the guest does not place ranges in the executor's space). */
    int r = ((CUresult(*)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long))fn)(
        &p, size, vgpu_exec_word(req, 1), 0, vgpu_exec_word(req, 3));
    if (r == CUDA_SUCCESS) {
        struct vgpu_exec_range *g = malloc(sizeof(*g));
        if (!g) {
            vgpu_error("executor: out of memory for the guest's reserved ranges");
            exit(1);
        }
        g->base = p;
        g->size = size;
        g->next = x->reserved;
        x->reserved = g;
    }
    uint64_t out = p;
    struct iovec v = { &out, r == CUDA_SUCCESS ? sizeof(out) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}

/* Only a range this guest reserved, whole. */
int vgpu_exec_cuMemAddressFree(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len != 16)
        return vgpu_exec_malformed("cuMemAddressFree", len);
    uint64_t p = vgpu_exec_word(req, 0), size = vgpu_exec_word(req, 1);
    struct vgpu_exec_range **at = &x->reserved;
    while (*at && ((*at)->base != p || (*at)->size != size))
        at = &(*at)->next;
    if (!*at)
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    int r = ((CUresult(*)(CUdeviceptr, size_t))fn)(p, size);
    if (r == CUDA_SUCCESS) {
        struct vgpu_exec_range *g = *at;
        *at = g->next;
        free(g);
    }
    return vgpu_exec_reply(x, r, NULL, 0);
}

/* [words][properties]: the properties, their Windows metadata cleared. */
static bool properties(const void *req, size_t len, unsigned words, CUmemAllocationProp *prop)
{
    if (len != words * 8 + sizeof(*prop))
        return false;
    memcpy(prop, (const char *)req + words * 8, sizeof(*prop));
    prop->win32HandleMetaData = NULL;
    return true;
}

int vgpu_exec_cuMemGetAllocationGranularity(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    CUmemAllocationProp prop;
    if (!properties(req, len, 1, &prop))
        return vgpu_exec_malformed("cuMemGetAllocationGranularity", len);
    size_t g = 0;
    int r = ((CUresult(*)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags))fn)(
        &g, &prop, (CUmemAllocationGranularity_flags)vgpu_exec_word(req, 0));
    uint64_t out = g;
    struct iovec v = { &out, r == CUDA_SUCCESS ? sizeof(out) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}

int vgpu_exec_cuMemCreate(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    CUmemAllocationProp prop;
    if (!properties(req, len, 2, &prop))
        return vgpu_exec_malformed("cuMemCreate", len);
    CUmemGenericAllocationHandle h = 0;
    int r = ((CUresult(*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long))fn)(
        &h, vgpu_exec_word(req, 0), &prop, vgpu_exec_word(req, 1));
    uint64_t out = h;
    struct iovec v = { &out, r == CUDA_SUCCESS ? sizeof(out) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}

/* [ptr][size][count] and count descriptors: the range must be the guest's. */
int vgpu_exec_cuMemSetAccess(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len < 24 || vgpu_exec_word(req, 2) > MAX_ACCESS || len != 24 + vgpu_exec_word(req, 2) * sizeof(CUmemAccessDesc))
        return vgpu_exec_malformed("cuMemSetAccess", len);
    uint64_t p = vgpu_exec_word(req, 0), size = vgpu_exec_word(req, 1), count = vgpu_exec_word(req, 2);
    if (!vgpu_exec_device_range(x, p, size ? size : 1, "cuMemSetAccess"))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    CUmemAccessDesc desc[MAX_ACCESS];
    memcpy(desc, (const char *)req + 24, count * sizeof(CUmemAccessDesc));
    int r = ((CUresult(*)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t))fn)(p, size, desc, count);
    return vgpu_exec_reply(x, r, NULL, 0);
}
