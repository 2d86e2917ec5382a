/*
 * Interprocess memory and events (cuIpc*), as far as processes of one
 * host need them: cuIpcGetMemHandle moves an allocation onto a memfd (its
 * bytes copied, at the same address) and names it by its pid and
 * descriptor; another process of the same user opens that descriptor
 * through /proc and maps the same bytes (cuIpcOpenMemHandle), which it
 * does not count as its own memory.  The exporting process opening its own
 * handle is refused, as the driver does.  An event's handle opens as an
 * event of the opener's own, created with timing disabled: the fake keeps
 * no event across processes.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MEM_TAG "fakeipcm"
#define EVENT_TAG "fakeipce"

struct mem_handle {
    char tag[8];
    int32_t pid, fd;
    uint64_t size;
};
_Static_assert(sizeof(struct mem_handle) <= CU_IPC_HANDLE_SIZE, "a handle holds it");

/* The allocation at base, moved onto a memfd (once): its descriptor, or -1. */
static int shared_fd_locked(struct alloc *a)
{
    if (a->ipc_fd)
        return a->ipc_fd - 1;
    int fd = memfd_create("fake-ipc", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    void *at = (void *)a->base;
    if (ftruncate(fd, (off_t)a->size) != 0 || pwrite(fd, at, a->size, 0) != (ssize_t)a->size ||
        mmap(at, a->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) != at) {
        close(fd);
        return -1;
    }
    a->ipc_fd = fd + 1;
    return fd;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    ENTER();
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct alloc *a = fake_find_containing_locked((uintptr_t)dptr, 1, 1u << A_DEVICE);
    int fd = a && a->base == (uintptr_t)dptr ? shared_fd_locked(a) : -2;
    struct mem_handle h = { .pid = (int32_t)getpid(), .fd = fd, .size = a ? a->size : 0 };
    UNLOCK();
    if (fd == -2)
        return CUDA_ERROR_INVALID_VALUE;
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(h.tag, MEM_TAG, sizeof(h.tag));
    memset(pHandle, 0, sizeof(*pHandle));
    memcpy(pHandle->reserved, &h, sizeof(h));
    return CUDA_SUCCESS;
}

static CUresult open_mem(CUdeviceptr *pdptr, CUipcMemHandle handle)
{
    struct mem_handle h;
    memcpy(&h, handle.reserved, sizeof(h));
    if (!pdptr || memcmp(h.tag, MEM_TAG, sizeof(h.tag)) != 0 || !h.size)
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (h.pid == (int32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT; /* a process does not open its own */
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)h.pid, (int)h.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct stat st;
    void *p = MAP_FAILED;
    if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size == h.size)
        p = mmap(NULL, h.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0)
        close(fd);
    if (p == MAP_FAILED)
        return CUDA_ERROR_INVALID_VALUE; /* its exporter, or its memory, is gone */
    struct alloc *a = fake_track(p, h.size, fake_current_device(), A_IPC, NULL, NULL);
    if (!a) {
        munmap(p, h.size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    ENTER();
    if (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        return CUDA_ERROR_INVALID_VALUE;
    return open_mem(pdptr, handle);
}

CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    return cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    ENTER();
    return fake_unmap_tracked((uintptr_t)dptr, A_IPC);
}

CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    ENTER();
    if (!pHandle || !event)
        return CUDA_ERROR_INVALID_HANDLE;
    memset(pHandle, 0, sizeof(*pHandle));
    memcpy(pHandle->reserved, EVENT_TAG, 8);
    int32_t pid = (int32_t)getpid();
    memcpy(pHandle->reserved + 8, &pid, sizeof(pid));
    return CUDA_SUCCESS;
}

CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    ENTER();
    int32_t pid;
    memcpy(&pid, handle.reserved + 8, sizeof(pid));
    if (!phEvent || memcmp(handle.reserved, EVENT_TAG, 8) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (pid == (int32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT;
    return cuEventCreate(phEvent, CU_EVENT_DISABLE_TIMING);
}
