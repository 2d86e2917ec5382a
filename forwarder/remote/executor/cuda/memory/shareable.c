/*
 * Shareable handles, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/memory/shareable.c; the messages:
 * forwarder/remote/spec/cuda.remote).  An exported POSIX file descriptor
 * goes to the guest beside the reply (x->fd_back), only when the guest
 * asked for one (VGPU_REMOTE_FD_OUT); an imported one came beside the call
 * (x->passed_fd, closed after it, as the importing process closes its
 * own).  A dma-buf is of the guest's device memory only.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <string.h>
#include <unistd.h>

/* What an export writes: a descriptor, or a handle of up to 64 bytes. */
union exported {
    int fd;
    CUmemFabricHandle fabric;
};

static int export_handle(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemExportToShareableHandle *in)
{
    bool fd = in->handleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if (fd != x->fd_wanted)
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    union exported e;
    memset(&e, 0, sizeof(e));
    int r = ((CUresult(*)(void *, uint64_t, CUmemAllocationHandleType, unsigned long long))fn)(
        &e, (uint64_t)in->handle, in->handleType, in->flags);
    struct vgpu_out_cuMemExportToShareableHandle out = { 0 };
    if (r == CUDA_SUCCESS && fd && e.fd < 0)
        r = CUDA_ERROR_UNKNOWN; /* the guest waits for a descriptor after a success */
    if (r == CUDA_SUCCESS && fd)
        x->fd_back = e.fd;
    else if (r == CUDA_SUCCESS && in->handleType == CU_MEM_HANDLE_TYPE_FABRIC)
        out.fabric = e.fabric;
    return vgpu_exec_reply_cuMemExportToShareableHandle(x, r, in, &out);
}

int vgpu_exec_cuMemExportToShareableHandle(struct vgpu_exec *x, void *fn,
                                           const struct vgpu_in_cuMemExportToShareableHandle *in)
{
    return export_handle(x, fn, in);
}

/* A pool is a handle the guest was given (an allocation handle an integer of the driver's). */
int vgpu_exec_cuMemPoolExportToShareableHandle(struct vgpu_exec *x, void *fn,
                                               const struct vgpu_in_cuMemExportToShareableHandle *in)
{
    if (!in->handle || !vgpu_exec_handle_known(x, (uint64_t)in->handle, false))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_HANDLE, NULL, 0);
    return export_handle(x, fn, in);
}

/* The driver's import takes a descriptor's value, or the handle's bytes. */
static void *os_handle(struct vgpu_exec *x, const struct vgpu_in_cuMemImportFromShareableHandle *in)
{
    return in->handleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ? (void *)(intptr_t)x->passed_fd
                                                                      : (void *)&in->fabric;
}

static bool passed_as_asked(const struct vgpu_exec *x, const struct vgpu_in_cuMemImportFromShareableHandle *in)
{
    return (in->handleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == (x->passed_fd >= 0);
}

int vgpu_exec_cuMemImportFromShareableHandle(struct vgpu_exec *x, void *fn,
                                             const struct vgpu_in_cuMemImportFromShareableHandle *in)
{
    struct vgpu_out_cuMemImportFromShareableHandle out = { 0 };
    int r = CUDA_ERROR_INVALID_VALUE;
    if (passed_as_asked(x, in) && !in->flags)
        r = ((CUresult(*)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType))fn)(
            &out.handle, os_handle(x, in), in->handleType);
    return vgpu_exec_reply_cuMemImportFromShareableHandle(x, r, in, &out);
}

int vgpu_exec_cuMemPoolImportFromShareableHandle(struct vgpu_exec *x, void *fn,
                                                 const struct vgpu_in_cuMemImportFromShareableHandle *in)
{
    struct vgpu_out_cuMemImportFromShareableHandle out = { 0 };
    CUmemoryPool pool = NULL;
    int r = CUDA_ERROR_INVALID_VALUE;
    if (passed_as_asked(x, in))
        r = ((CUresult(*)(CUmemoryPool *, void *, CUmemAllocationHandleType, unsigned long long))fn)(
            &pool, os_handle(x, in), in->handleType, in->flags);
    if (r == CUDA_SUCCESS) /* a pool is a handle the guest is given (an allocation handle an integer) */
        vgpu_exec_handle_add(x, (uint64_t)(uintptr_t)pool);
    out.handle = (CUmemGenericAllocationHandle)(uintptr_t)pool;
    return vgpu_exec_reply_cuMemImportFromShareableHandle(x, r, in, &out);
}

int vgpu_exec_cuMemGetHandleForAddressRange(struct vgpu_exec *x, void *fn,
                                            const struct vgpu_in_cuMemGetHandleForAddressRange *in)
{
    bool fd = in->handleType == CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD;
    if (fd != x->fd_wanted || !vgpu_exec_device_range(x, (uint64_t)in->dptr, in->size, "cuMemGetHandleForAddressRange"))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    int got = -1;
    int r = ((CUresult(*)(void *, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long))fn)(
        &got, in->dptr, in->size, in->handleType, in->flags);
    if (r == CUDA_SUCCESS && got < 0)
        r = CUDA_ERROR_UNKNOWN; /* the guest waits for a descriptor after a success */
    if (r == CUDA_SUCCESS)
        x->fd_back = got;
    return vgpu_exec_reply(x, r, NULL, 0);
}
