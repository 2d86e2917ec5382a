/*
 * Functions' and kernels' names (cuFuncGetName, cuKernelGetName), the
 * guest's side (forwarder/remote/executor/cuda/modules/names.c is the other; the messages:
 * forwarder/remote/spec/cuda.remote): the executor's driver's name, kept
 * in the guest for the life of the process, as the driver keeps its own.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#define SLOT(name) VGPU_CUDA_SLOT_##name

static CUresult name_of(unsigned slot, const char **name, const void *f)
{
    if (!name || !f)
        return CUDA_ERROR_INVALID_VALUE;
    char got[VGPU_OUT_cuFuncGetName_name_MAX];
    struct vgpu_in_cuFuncGetName in = { .hfunc = (CUfunction)(uintptr_t)f };
    struct vgpu_out_cuFuncGetName out = { .tail = got, .tail_size = sizeof(got) };
    CUresult r = (CUresult)vgpu_remote_call_cuFuncGetName(slot, 0, &in, &out);
    if (r != CUDA_SUCCESS)
        return r;
    const char *kept = vgpu_remote_intern(out.name);
    if (!kept)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *name = kept;
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuFuncGetName(const char **name, CUfunction f)
{
    return name_of(SLOT(cuFuncGetName), name, f);
}

CUresult vgpu_remote_guest_cuKernelGetName(const char **name, CUkernel k)
{
    return name_of(SLOT(cuKernelGetName), name, k);
}
