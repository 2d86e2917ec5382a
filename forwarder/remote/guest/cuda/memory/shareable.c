/*
 * Shareable handles, the guest's side (forwarder/remote/executor/cuda/memory/shareable.c is
 * the other; the messages: forwarder/remote/spec/cuda.remote): a virtual
 * memory allocation's or a memory pool's, exported and imported, and a
 * range of device memory as a dma-buf.  A POSIX file descriptor crosses
 * beside its call on the guest's socket, as the executor's driver made it
 * or as the guest passes it (its own, which stays the caller's): the
 * driver's descriptor of GPU memory of the host, which another guest of
 * the host (or a native process) imports through its own executor.  A VM's
 * channel carries no descriptor: there such a call is refused.  A fabric
 * handle crosses as its 64 bytes; other kinds (Windows') cross for the
 * executor's driver to refuse.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/transport/wire.h"

#include "vgpu_cuda_slots.h"

#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

static CUresult export_handle(unsigned slot, void *out, uint64_t handle, CUmemAllocationHandleType type,
                              unsigned long long flags)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    bool fd = type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    struct vgpu_in_cuMemExportToShareableHandle in = { .handle = (CUmemGenericAllocationHandle)handle,
                                                       .handleType = type,
                                                       .flags = flags };
    struct vgpu_out_cuMemExportToShareableHandle got = { 0 };
    CUresult r = (CUresult)vgpu_remote_call_cuMemExportToShareableHandle(slot, fd ? VGPU_REMOTE_FD_OUT : 0, &in, &got);
    if (r != CUDA_SUCCESS)
        return r;
    if (fd)
        *(int *)out = vgpu_remote_fd_taken();
    else if (type == CU_MEM_HANDLE_TYPE_FABRIC)
        memcpy(out, &got.fabric, sizeof(got.fabric));
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle handle,
                                                        CUmemAllocationHandleType type, unsigned long long flags)
{
    return export_handle(SLOT(cuMemExportToShareableHandle), out, handle, type, flags);
}

CUresult vgpu_remote_guest_cuMemPoolExportToShareableHandle(void *out, CUmemoryPool pool,
                                                            CUmemAllocationHandleType type, unsigned long long flags)
{
    return export_handle(SLOT(cuMemPoolExportToShareableHandle), out, (uint64_t)(uintptr_t)pool, type, flags);
}

/* os is a descriptor's value (a POSIX file descriptor's kind) or points to
 * the handle (a fabric handle's). */
static CUresult import_handle(unsigned slot, uint64_t *out, void *os, CUmemAllocationHandleType type,
                              unsigned long long flags)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    bool fd = type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    struct vgpu_in_cuMemImportFromShareableHandle in = { .handleType = type, .flags = flags };
    if (type == CU_MEM_HANDLE_TYPE_FABRIC) {
        if (!os)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(&in.fabric, os, sizeof(in.fabric));
    }
    if (fd)
        vgpu_remote_fd_to_pass((int)(intptr_t)os);
    struct vgpu_out_cuMemImportFromShareableHandle got = { 0 };
    CUresult r = (CUresult)vgpu_remote_call_cuMemImportFromShareableHandle(slot, fd ? VGPU_REMOTE_FD_IN : 0, &in, &got);
    if (r == CUDA_SUCCESS)
        *out = (uint64_t)got.handle;
    return r;
}

CUresult vgpu_remote_guest_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *os,
                                                          CUmemAllocationHandleType type)
{
    uint64_t h = 0;
    CUresult r = import_handle(SLOT(cuMemImportFromShareableHandle), handle ? &h : NULL, os, type, 0);
    if (r == CUDA_SUCCESS)
        *handle = (CUmemGenericAllocationHandle)h;
    return r;
}

CUresult vgpu_remote_guest_cuMemPoolImportFromShareableHandle(CUmemoryPool *pool, void *os,
                                                              CUmemAllocationHandleType type, unsigned long long flags)
{
    uint64_t h = 0;
    CUresult r = import_handle(SLOT(cuMemPoolImportFromShareableHandle), pool ? &h : NULL, os, type, flags);
    if (r == CUDA_SUCCESS)
        *pool = (CUmemoryPool)(uintptr_t)h;
    return r;
}

/* A range of the guest's device memory as a dma-buf: its descriptor. */
CUresult vgpu_remote_guest_cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                                         CUmemRangeHandleType type, unsigned long long flags)
{
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    bool fd = type == CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD;
    struct vgpu_in_cuMemGetHandleForAddressRange in = {
        .dptr = dptr, .size = size, .handleType = type, .flags = flags
    };
    struct vgpu_out_cuMemGetHandleForAddressRange got;
    CUresult r = (CUresult)vgpu_remote_call_cuMemGetHandleForAddressRange(SLOT(cuMemGetHandleForAddressRange),
                                                                          fd ? VGPU_REMOTE_FD_OUT : 0, &in, &got);
    if (r == CUDA_SUCCESS && fd)
        *(int *)handle = vgpu_remote_fd_taken();
    return r;
}
