/*
 * Memsets of the guest's own page-locked memory (cuMemHostAlloc,
 * cuMemHostRegister: host_memory.c), done in the guest.  Under unified
 * addressing a program may memset such memory by its address as if it were
 * the GPU's (XLA sets flags in pinned memory so); the executor's driver has
 * never seen it, and the GPU cannot reach it.  An asynchronous one is done
 * after its stream's work (work enqueued after it follows it, as with the
 * copies of guest memory to guest memory, copy.c); every other memset is
 * carried.  A range that starts in a block of the guest's and runs past it
 * is refused (CUDA_ERROR_INVALID_VALUE), as the driver refuses it.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"
#include "vgpu_remote_cuda_guest.h"

#include <string.h>

/* Whether the rows (height of width elements of size bytes, pitch apart;
 * one row when height is 1) from dst are guest memory: 1 they are, 0 they
 * are none of it, -1 they start in it but are not a memset the driver
 * takes: past the block, rows longer than their pitch, an element not at
 * its alignment. */
static int guest_rows(CUdeviceptr dst, size_t pitch, size_t width, size_t height, size_t size)
{
    void *base;
    size_t room;
    bool mapped;
    if (!dst || !vgpu_remote_host_block((const void *)(uintptr_t)dst, &base, &room, &mapped))
        return 0;
    if (!width || !height)
        return 1;
    size_t at = dst - (uintptr_t)base, row, last;
    if (__builtin_mul_overflow(width, size, &row) || (height > 1 && pitch < row) || dst % size || pitch % size ||
        __builtin_mul_overflow(height - 1, pitch, &last) || __builtin_add_overflow(last, row, &last) ||
        last > room - at)
        return -1;
    return 1;
}

/* Fills the rows with value's size bytes, after stream's work when there is one. */
static CUresult fill(CUdeviceptr dst, size_t pitch, uint32_t value, size_t size, size_t width, size_t height,
                     const CUstream *stream)
{
    CUresult r = stream ? VGPU_REMOTE_CUDA(cuStreamSynchronize)(*stream) : CUDA_SUCCESS;
    for (size_t y = 0; r == CUDA_SUCCESS && y < height; y++) {
        unsigned char *row = (unsigned char *)(uintptr_t)(dst + y * pitch);
        if (size == 1)
            memset(row, (int)(value & 0xff), width);
        for (size_t i = 0; size > 1 && i < width; i++)
            memcpy(row + i * size, size == 2 ? (const void *)&(uint16_t){ (uint16_t)value } : (const void *)&value,
                   size);
    }
    return r;
}

/* NAME: a memset of elements of SIZE bytes (TYPE), rows or not, with a stream
 * or not; the _ptds/_ptsz forms name the thread's stream. */
#define MEMSET(name, type, size)                                                                                       \
    CUresult vgpu_remote_guest_##name(CUdeviceptr dst, type value, size_t n)                                         \
    {                                                                                                                  \
        int g = guest_rows(dst, 0, n, 1, size);                                                                        \
        return g < 0 ? CUDA_ERROR_INVALID_VALUE                                                                        \
               : g   ? fill(dst, 0, value, size, n, 1, NULL)                                                           \
                     : (CUresult)vgpu_remote_carried_##name(dst, value, n);                                              \
    }
#define MEMSET_ASYNC(name, type, size, ptsz)                                                                           \
    CUresult vgpu_remote_guest_##name(CUdeviceptr dst, type value, size_t n, CUstream stream)                        \
    {                                                                                                                  \
        int g = guest_rows(dst, 0, n, 1, size);                                                                        \
        CUstream s = ptsz ? vgpu_remote_per_thread(stream) : stream;                                                   \
        return g < 0 ? CUDA_ERROR_INVALID_VALUE                                                                        \
               : g   ? fill(dst, 0, value, size, n, 1, &s)                                                             \
                     : (CUresult)vgpu_remote_carried_##name(dst, value, n, stream);                                      \
    }
#define MEMSET_2D(name, type, size)                                                                                    \
    CUresult vgpu_remote_guest_##name(CUdeviceptr dst, size_t pitch, type value, size_t w, size_t h)                 \
    {                                                                                                                  \
        int g = guest_rows(dst, pitch, w, h, size);                                                                    \
        return g < 0 ? CUDA_ERROR_INVALID_VALUE                                                                        \
               : g   ? fill(dst, pitch, value, size, w, h, NULL)                                                       \
                     : (CUresult)vgpu_remote_carried_##name(dst, pitch, value, w, h);                                    \
    }
#define MEMSET_2D_ASYNC(name, type, size, ptsz)                                                                        \
    CUresult vgpu_remote_guest_##name(CUdeviceptr dst, size_t pitch, type value, size_t w, size_t h,                 \
                                        CUstream stream)                                                               \
    {                                                                                                                  \
        int g = guest_rows(dst, pitch, w, h, size);                                                                    \
        CUstream s = ptsz ? vgpu_remote_per_thread(stream) : stream;                                                   \
        return g < 0 ? CUDA_ERROR_INVALID_VALUE                                                                        \
               : g   ? fill(dst, pitch, value, size, w, h, &s)                                                         \
                     : (CUresult)vgpu_remote_carried_##name(dst, pitch, value, w, h, stream);                            \
    }

MEMSET(cuMemsetD8_v2, unsigned char, 1)
MEMSET(cuMemsetD8_v2_ptds, unsigned char, 1)
MEMSET(cuMemsetD16_v2, unsigned short, 2)
MEMSET(cuMemsetD16_v2_ptds, unsigned short, 2)
MEMSET(cuMemsetD32_v2, unsigned int, 4)
MEMSET(cuMemsetD32_v2_ptds, unsigned int, 4)
MEMSET_ASYNC(cuMemsetD8Async, unsigned char, 1, 0)
MEMSET_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1, 1)
MEMSET_ASYNC(cuMemsetD16Async, unsigned short, 2, 0)
MEMSET_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2, 1)
MEMSET_ASYNC(cuMemsetD32Async, unsigned int, 4, 0)
MEMSET_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4, 1)
MEMSET_2D(cuMemsetD2D8_v2, unsigned char, 1)
MEMSET_2D(cuMemsetD2D8_v2_ptds, unsigned char, 1)
MEMSET_2D(cuMemsetD2D16_v2, unsigned short, 2)
MEMSET_2D(cuMemsetD2D16_v2_ptds, unsigned short, 2)
MEMSET_2D(cuMemsetD2D32_v2, unsigned int, 4)
MEMSET_2D(cuMemsetD2D32_v2_ptds, unsigned int, 4)
MEMSET_2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1, 0)
MEMSET_2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1, 1)
MEMSET_2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2, 0)
MEMSET_2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2, 1)
MEMSET_2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4, 0)
MEMSET_2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4, 1)
