/*
 * Functions' and kernels' names, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/modules/names.c; the messages: forwarder/remote/spec/cuda.remote):
 * the driver's name of a function or kernel the guest was given (the
 * generated parse checks the handle).  A name longer than a reply carries
 * (a mangled name past 4 KiB) is CUDA_ERROR_NOT_SUPPORTED.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <string.h>

static int name_of(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuFuncGetName *in)
{
    const char *name = NULL;
    int r = ((CUresult(*)(const char **, CUfunction))fn)(&name, in->hfunc);
    if (r == CUDA_SUCCESS &&
        (!name || strnlen(name, VGPU_OUT_cuFuncGetName_name_MAX) >= VGPU_OUT_cuFuncGetName_name_MAX))
        r = CUDA_ERROR_NOT_SUPPORTED;
    struct vgpu_out_cuFuncGetName out = { .name = r == CUDA_SUCCESS ? name : "" };
    return vgpu_exec_reply_cuFuncGetName(x, r, in, &out);
}

int vgpu_exec_cuFuncGetName(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuFuncGetName *in)
{
    return name_of(x, fn, in);
}

int vgpu_exec_cuKernelGetName(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuFuncGetName *in)
{
    return name_of(x, fn, in);
}
