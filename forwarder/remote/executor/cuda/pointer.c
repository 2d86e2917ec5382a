/*
 * Pointers' attributes, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/pointer.c; what crosses: docs/design/remote.md).  Any
 * address may be asked about: the driver looks it up and never reads
 * through it.  Each value is written into a zeroed word of the executor's;
 * a context or a pool it names becomes the guest's handle.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <string.h>

#define MAX_ATTRS 32

/* Attributes whose values are one integer, pointer or handle: those the
 * guest carries. */
static bool carried(uint64_t a)
{
    return (a >= CU_POINTER_ATTRIBUTE_CONTEXT && a <= CU_POINTER_ATTRIBUTE_MAPPED &&
            a != CU_POINTER_ATTRIBUTE_P2P_TOKENS) ||
           a == CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE || a == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE ||
           a == CU_POINTER_ATTRIBUTE_ACCESS_FLAGS || a == CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES ||
           a == CU_POINTER_ATTRIBUTE_MAPPING_SIZE || a == CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR ||
           a == CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID;
}

/* [ptr][n][n attributes]: n words back. */
static int attributes(struct vgpu_exec *x, void *fn, const void *req, size_t len, bool plural, const char *call)
{
    if (len < 16 || vgpu_exec_word(req, 1) == 0 || vgpu_exec_word(req, 1) > (plural ? MAX_ATTRS : 1) ||
        len != (2 + vgpu_exec_word(req, 1)) * 8)
        return vgpu_exec_malformed(call, len);
    unsigned n = (unsigned)vgpu_exec_word(req, 1);
    CUpointer_attribute attrs[MAX_ATTRS];
    uint64_t v[MAX_ATTRS];
    void *data[MAX_ATTRS];
    memset(v, 0, sizeof(v));
    for (unsigned i = 0; i < n; i++) {
        if (!carried(vgpu_exec_word(req, 2 + i)))
            return vgpu_exec_reply(x, CUDA_ERROR_NOT_SUPPORTED, NULL, 0);
        attrs[i] = (CUpointer_attribute)vgpu_exec_word(req, 2 + i);
        data[i] = &v[i];
    }
    CUdeviceptr ptr = vgpu_exec_word(req, 0);
    int r = plural ? ((CUresult(*)(unsigned, CUpointer_attribute *, void **, CUdeviceptr))fn)(n, attrs, data, ptr)
                   : ((CUresult(*)(void *, CUpointer_attribute, CUdeviceptr))fn)(data[0], attrs[0], ptr);
    if (r == CUDA_SUCCESS)
        for (unsigned i = 0; i < n; i++)
            if (attrs[i] == CU_POINTER_ATTRIBUTE_CONTEXT || attrs[i] == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
                vgpu_exec_handle_add(x, v[i]);
    struct iovec out = { v, r == CUDA_SUCCESS ? n * sizeof(uint64_t) : 0 };
    return vgpu_exec_reply(x, r, &out, 1);
}

int vgpu_exec_cuPointerGetAttributes(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return attributes(x, fn, req, len, true, "cuPointerGetAttributes");
}

int vgpu_exec_cuPointerGetAttribute(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return attributes(x, fn, req, len, false, "cuPointerGetAttribute");
}
