/*
 * Error strings and the driver's lookup, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/lookup.c; the messages: forwarder/remote/spec/
 * cuda.remote).
 */
#define _GNU_SOURCE
#include "forwarder/remote/executor/cuda/calls.h"

#include <dlfcn.h>
#include <string.h>

/* The driver's own text, which it keeps: it crosses as it is (its start,
 * where it is longer than a reply carries). */
static int error_text(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGetErrorName *in)
{
    const char *s = NULL;
    int r = ((CUresult(*)(CUresult, const char **))fn)((CUresult)in->error, &s);
    struct vgpu_out_cuGetErrorName out = { .str = s };
    return vgpu_exec_reply_cuGetErrorName(x, r, in, &out);
}

int vgpu_exec_cuGetErrorName(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGetErrorName *in)
{
    return error_text(x, fn, in);
}

int vgpu_exec_cuGetErrorString(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGetErrorName *in)
{
    return error_text(x, fn, in);
}

/* cuGetProcAddress (v1 and v2): the name of the exported function the
 * driver's lookup found, which the guest maps to its own slot; none when
 * it found nothing (success, as the driver says it: a NULL function).  A
 * pointer that is not exactly an exported function's is not found. */
static int proc_address(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGetProcAddress_v2 *in, bool v2)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult r =
        v2 ? ((CUresult(*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))fn)(
                 in->symbol, &p, in->cudaVersion, in->flags, &status)
           : ((CUresult(*)(const char *, void **, int, cuuint64_t))fn)(in->symbol, &p, in->cudaVersion, in->flags);
    Dl_info info;
    const char *name = "";
    if (r == CUDA_SUCCESS && p) {
        if (dladdr(p, &info) && info.dli_saddr == p && info.dli_sname &&
            strlen(info.dli_sname) < VGPU_OUT_cuGetProcAddress_v2_name_MAX)
            name = info.dli_sname;
        else
            status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    struct vgpu_out_cuGetProcAddress_v2 out = { .symbolStatus = status, .name = name };
    return vgpu_exec_reply_cuGetProcAddress_v2(x, r, in, &out);
}

int vgpu_exec_cuGetProcAddress_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGetProcAddress_v2 *in)
{
    return proc_address(x, fn, in, true);
}

int vgpu_exec_cuGetProcAddress(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGetProcAddress_v2 *in)
{
    return proc_address(x, fn, in, false);
}
