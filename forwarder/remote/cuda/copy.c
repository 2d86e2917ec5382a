/*
 * Copies, the guest's side (tools/executor/exec_copy.c is the other; what
 * crosses: docs/remote.md).  The guest's memory crosses in the messages, in
 * chunks of at most VGPU_REMOTE_CHUNK: to the device without waiting for a
 * reply when the copy is asynchronous, from the device always waited for
 * (the guest's buffer is written when the reply comes, as a copy to
 * pageable memory is done when the driver returns).  A copy between
 * unified addresses asks the executor which side is the GPU's.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/client.h"
#include "forwarder/remote/cuda/manual.h"
#include "forwarder/remote/wire.h"

#include "vgpu_cuda_slots.h"

#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

/* Words: dst, the length, the stream (asynchronous copies only); then the bytes. */
static CUresult to_device(unsigned slot, CUdeviceptr dst, const void *src, size_t n, const CUstream *stream)
{
    if (n && !src)
        return CUDA_ERROR_INVALID_VALUE;
    size_t done = 0;
    do {
        size_t c = n - done < VGPU_REMOTE_CHUNK ? n - done : VGPU_REMOTE_CHUNK;
        uint64_t w[3] = { dst + done, c, stream ? (uint64_t)(uintptr_t)*stream : 0 };
        struct iovec q[2] = { { w, (stream ? 3 : 2) * sizeof(uint64_t) }, { (char *)src + done, c } };
        CUresult r = stream ? vgpu_remote_send(slot, q, 2) : vgpu_remote_call(slot, q, 2, NULL, 0, NULL);
        if (r != CUDA_SUCCESS)
            return r;
        done += c;
    } while (done < n);
    return CUDA_SUCCESS;
}

static CUresult to_host(unsigned slot, void *dst, CUdeviceptr src, size_t n, const CUstream *stream)
{
    if (n && !dst)
        return CUDA_ERROR_INVALID_VALUE;
    size_t done = 0;
    do {
        size_t c = n - done < VGPU_REMOTE_CHUNK ? n - done : VGPU_REMOTE_CHUNK, got = 0;
        uint64_t w[3] = { src + done, c, stream ? (uint64_t)(uintptr_t)*stream : 0 };
        struct iovec q = { w, (stream ? 3 : 2) * sizeof(uint64_t) }, a = { (char *)dst + done, c };
        CUresult r = vgpu_remote_call(slot, &q, 1, &a, 1, &got);
        if (r != CUDA_SUCCESS)
            return r;
        if (got != c)
            return CUDA_ERROR_UNKNOWN;
        done += c;
    } while (done < n);
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    return to_device(SLOT(cuMemcpyHtoD_v2), dst, src, n, NULL);
}

CUresult vgpu_remote_guest_cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    return to_host(SLOT(cuMemcpyDtoH_v2), dst, src, n, NULL);
}

CUresult vgpu_remote_guest_cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream stream)
{
    return to_device(SLOT(cuMemcpyHtoDAsync_v2), dst, src, n, &stream);
}

CUresult vgpu_remote_guest_cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream stream)
{
    return to_host(SLOT(cuMemcpyDtoHAsync_v2), dst, src, n, &stream);
}

/* The per-thread forms.  A synchronous copy made after the legacy default
 * stream's work rather than the thread's own waits for more, never for
 * less; an asynchronous one names the thread's stream. */
CUresult vgpu_remote_guest_cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
    return vgpu_remote_guest_cuMemcpyHtoD_v2(dst, src, n);
}

CUresult vgpu_remote_guest_cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
    return vgpu_remote_guest_cuMemcpyDtoH_v2(dst, src, n);
}

CUresult vgpu_remote_guest_cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream stream)
{
    return vgpu_remote_guest_cuMemcpyHtoDAsync_v2(dst, src, n, vgpu_remote_per_thread(stream));
}

CUresult vgpu_remote_guest_cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream stream)
{
    return vgpu_remote_guest_cuMemcpyDtoHAsync_v2(dst, src, n, vgpu_remote_per_thread(stream));
}

/* Whether p is an address of the GPU's (an allocation the executor's
 * driver knows) rather than the guest's own memory. */
static bool on_device(CUdeviceptr p)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    return p && VGPU_REMOTE_CUDA(cuMemGetAddressRange_v2)(&base, &size, p) == CUDA_SUCCESS;
}

/* A copy between unified addresses, by the sides it joins.  Guest memory
 * to guest memory is the guest's own memcpy, after the stream's work. */
static CUresult unified(CUdeviceptr dst, CUdeviceptr src, size_t n, const CUstream *stream)
{
    if (!n)
        return CUDA_SUCCESS;
    bool d = on_device(dst), s = on_device(src);
    if (d && s)
        return stream ? VGPU_REMOTE_CUDA(cuMemcpyDtoDAsync_v2)(dst, src, n, *stream)
                      : VGPU_REMOTE_CUDA(cuMemcpyDtoD_v2)(dst, src, n);
    if (d)
        return stream ? vgpu_remote_guest_cuMemcpyHtoDAsync_v2(dst, (const void *)(uintptr_t)src, n, *stream)
                      : vgpu_remote_guest_cuMemcpyHtoD_v2(dst, (const void *)(uintptr_t)src, n);
    if (s)
        return stream ? vgpu_remote_guest_cuMemcpyDtoHAsync_v2((void *)(uintptr_t)dst, src, n, *stream)
                      : vgpu_remote_guest_cuMemcpyDtoH_v2((void *)(uintptr_t)dst, src, n);
    CUresult r = stream ? VGPU_REMOTE_CUDA(cuStreamSynchronize)(*stream) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return r;
}

CUresult vgpu_remote_guest_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return unified(dst, src, n, NULL);
}

CUresult vgpu_remote_guest_cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return unified(dst, src, n, NULL);
}

CUresult vgpu_remote_guest_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
{
    return unified(dst, src, n, &stream);
}

CUresult vgpu_remote_guest_cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
{
    stream = vgpu_remote_per_thread(stream);
    return unified(dst, src, n, &stream);
}
