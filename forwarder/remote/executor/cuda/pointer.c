/*
 * Pointers' attributes, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/pointer.c; the messages: forwarder/remote/spec/
 * cuda.remote).  Any address may be asked about: the driver looks it up
 * and never reads through it.  Each value is written into a zeroed word of the executor's;
 * a context or a pool it names becomes the guest's handle.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <string.h>

#define MAX_ATTRS VGPU_IN_cuPointerGetAttributes_numAttributes_MAX

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

/* Each attribute's value, one word each. */
static int attributes(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuPointerGetAttributes *in, bool plural,
                      const char *call)
{
    unsigned n = in->numAttributes;
    if (n == 0 || (!plural && n != 1))
        return vgpu_exec_malformed(call, n);
    CUpointer_attribute attrs[MAX_ATTRS];
    uint64_t v[MAX_ATTRS];
    void *data[MAX_ATTRS];
    memset(v, 0, sizeof(v));
    for (unsigned i = 0; i < n; i++) {
        if (!carried(in->attributes[i]))
            return vgpu_exec_reply(x, CUDA_ERROR_NOT_SUPPORTED, NULL, 0);
        attrs[i] = in->attributes[i];
        data[i] = &v[i];
    }
    int r = plural ? ((CUresult(*)(unsigned, CUpointer_attribute *, void **, CUdeviceptr))fn)(n, attrs, data, in->ptr)
                   : ((CUresult(*)(void *, CUpointer_attribute, CUdeviceptr))fn)(data[0], attrs[0], in->ptr);
    if (r == CUDA_SUCCESS)
        for (unsigned i = 0; i < n; i++)
            if (attrs[i] == CU_POINTER_ATTRIBUTE_CONTEXT || attrs[i] == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
                vgpu_exec_handle_add(x, v[i]);
    struct vgpu_out_cuPointerGetAttributes out = { .values = v };
    return vgpu_exec_reply_cuPointerGetAttributes(x, r, in, &out);
}

int vgpu_exec_cuPointerGetAttributes(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuPointerGetAttributes *in)
{
    return attributes(x, fn, in, true, "cuPointerGetAttributes");
}

int vgpu_exec_cuPointerGetAttribute(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuPointerGetAttributes *in)
{
    return attributes(x, fn, in, false, "cuPointerGetAttribute");
}

/* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS of the guest's device memory. */
int vgpu_exec_cuPointerSetAttribute(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuPointerSetAttribute *in)
{
    if (in->attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS ||
        !vgpu_exec_device_memory(x, (uint64_t)in->ptr, "cuPointerSetAttribute"))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    unsigned value = in->word;
    int r = ((CUresult(*)(const void *, CUpointer_attribute, CUdeviceptr))fn)(&value, in->attribute, in->ptr);
    return vgpu_exec_reply(x, r, NULL, 0);
}
