/*
 * Copies, the guest's side (forwarder/remote/executor/cuda/copies/copy.c is the
 * other; the messages: forwarder/remote/spec/cuda.remote).  A pageable copy of a MiB or more is
 * staged through page-locked blocks (staged.c); a smaller one's bytes cross in the messages, in
 * chunks of at most VGPU_REMOTE_CHUNK: to the device without waiting for a
 * reply when the copy is asynchronous, from the device always waited for
 * (the guest's buffer is written when the reply comes, as a copy to
 * pageable memory is done when the driver returns).  A copy between
 * unified addresses asks the executor which side is the GPU's.  A 2D copy's
 * guest side crosses packed, its rows one after another, a 3D copy's a
 * layer after another; an array's bytes to or from the guest's memory in
 * chunks.  The guest's own
 * page-locked memory named as a copy's device side is the guest's: the
 * executor's driver has never seen it; a page-locked block shared with the
 * executor is named by its address, its bytes never in a message.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/transport/wire.h"

#include "vgpu_cuda_slots.h"

#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

/* Whether p is in the guest's own page-locked memory (host_memory.c),
 * which a program may name as the GPU's side of a copy under unified
 * addressing: the executor's driver has never seen it. */
static bool guest_block(CUdeviceptr p)
{
    void *base;
    size_t size;
    bool mapped;
    return p && vgpu_remote_host_block((const void *)(uintptr_t)p, &base, &size, &mapped);
}

/* A copy of the guest's memory to the guest's memory: its own, after the
 * stream's work; n bytes from a page-locked block must lie in it. */
static CUresult in_guest(void *dst, const void *src, size_t n, const CUstream *stream)
{
    void *base;
    size_t size;
    bool mapped;
    const void *ends[2] = { dst, src };
    for (int i = 0; i < 2; i++)
        if (vgpu_remote_host_block(ends[i], &base, &size, &mapped) &&
            n > size - (size_t)((const char *)ends[i] - (const char *)base))
            return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream ? VGPU_REMOTE_CUDA(cuStreamSynchronize)(*stream) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS && n)
        memmove(dst, src, n);
    return r;
}

/* A copy to the device: its bytes in the message, in chunks, or, from a
 * block shared with the executor, its address (no bytes cross).  An
 * asynchronous one is sent without waiting, as a local driver's returns
 * before the stream gets to it. */
static CUresult to_device(unsigned slot, CUdeviceptr dst, const void *src, size_t n, const CUstream *stream)
{
    if (n && !src)
        return CUDA_ERROR_INVALID_VALUE;
    if (guest_block(dst))
        return in_guest((void *)(uintptr_t)dst, src, n, stream);
    struct vgpu_in_cuMemcpyHtoDAsync_v2 in = { .dstDevice = dst, .ByteCount = n, .srcHost = src };
    if (stream)
        in.hStream = *stream;
    if (n && vgpu_remote_host_shared(src, n))
        return stream ? vgpu_remote_send_cuMemcpyHtoDAsync_v2(slot, VGPU_REMOTE_SHARED, &in)
                      : vgpu_remote_call_cuMemcpyHtoDAsync_v2(slot, VGPU_REMOTE_SHARED, &in, NULL);
    CUresult staged;
    if (vgpu_remote_staged_to_device(dst, src, n, in.hStream, !stream, &staged))
        return staged;
    size_t done = 0;
    do {
        in.dstDevice = dst + done;
        in.srcHost = (const char *)src + done;
        in.ByteCount = n - done < VGPU_REMOTE_CHUNK ? n - done : VGPU_REMOTE_CHUNK;
        CUresult r = stream ? vgpu_remote_send_cuMemcpyHtoDAsync_v2(slot, 0, &in)
                            : vgpu_remote_call_cuMemcpyHtoDAsync_v2(slot, 0, &in, NULL);
        if (r != CUDA_SUCCESS)
            return r;
        done += in.ByteCount;
    } while (done < n);
    return CUDA_SUCCESS;
}

/* A copy to the guest's memory: its bytes in the replies, in chunks,
 * always waited for; into a block shared with the executor, which writes
 * it itself, without waiting when asynchronous. */
static CUresult to_host(unsigned slot, void *dst, CUdeviceptr src, size_t n, const CUstream *stream)
{
    if (n && !dst)
        return CUDA_ERROR_INVALID_VALUE;
    if (guest_block(src))
        return in_guest(dst, (const void *)(uintptr_t)src, n, stream);
    struct vgpu_in_cuMemcpyDtoHAsync_v2 in = { .srcDevice = src, .ByteCount = n };
    if (stream)
        in.hStream = *stream;
    if (n && vgpu_remote_host_shared(dst, n)) {
        struct vgpu_out_cuMemcpyDtoHAsync_v2 out = { .dstHost = dst };
        return stream ? vgpu_remote_send_cuMemcpyDtoHAsync_v2(slot, VGPU_REMOTE_SHARED, &in, dst)
                      : vgpu_remote_call_cuMemcpyDtoHAsync_v2(slot, VGPU_REMOTE_SHARED, &in, &out);
    }
    CUresult staged;
    if (vgpu_remote_staged_to_host(dst, src, n, in.hStream, &staged))
        return staged;
    size_t done = 0;
    do {
        in.srcDevice = src + done;
        in.ByteCount = n - done < VGPU_REMOTE_CHUNK ? n - done : VGPU_REMOTE_CHUNK;
        struct vgpu_out_cuMemcpyDtoHAsync_v2 out = { .dstHost = (char *)dst + done };
        CUresult r = vgpu_remote_call_cuMemcpyDtoHAsync_v2(slot, 0, &in, &out);
        if (r != CUDA_SUCCESS)
            return r;
        done += in.ByteCount;
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
    return in_guest((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, stream);
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

/* Device to device, where either side may be the guest's page-locked
 * memory named as the GPU's: that side is the guest's, the other the GPU's. */
static CUresult device_to_device(CUdeviceptr dst, CUdeviceptr src, size_t n, const CUstream *stream)
{
    bool d = guest_block(dst), s = guest_block(src);
    if (d && s)
        return in_guest((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, stream);
    if (d)
        return stream ? vgpu_remote_guest_cuMemcpyDtoHAsync_v2((void *)(uintptr_t)dst, src, n, *stream)
                      : vgpu_remote_guest_cuMemcpyDtoH_v2((void *)(uintptr_t)dst, src, n);
    return stream ? vgpu_remote_guest_cuMemcpyHtoDAsync_v2(dst, (const void *)(uintptr_t)src, n, *stream)
                  : vgpu_remote_guest_cuMemcpyHtoD_v2(dst, (const void *)(uintptr_t)src, n);
}

CUresult vgpu_remote_guest_cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return guest_block(dst) || guest_block(src) ? device_to_device(dst, src, n, NULL)
                                                : (CUresult)vgpu_remote_carried_cuMemcpyDtoD_v2(dst, src, n);
}

CUresult vgpu_remote_guest_cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return guest_block(dst) || guest_block(src) ? device_to_device(dst, src, n, NULL)
                                                : (CUresult)vgpu_remote_carried_cuMemcpyDtoD_v2_ptds(dst, src, n);
}

CUresult vgpu_remote_guest_cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
{
    return guest_block(dst) || guest_block(src)
               ? device_to_device(dst, src, n, &stream)
               : (CUresult)vgpu_remote_carried_cuMemcpyDtoDAsync_v2(dst, src, n, stream);
}

CUresult vgpu_remote_guest_cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
{
    CUstream own = vgpu_remote_per_thread(stream);
    return guest_block(dst) || guest_block(src)
               ? device_to_device(dst, src, n, &own)
               : (CUresult)vgpu_remote_carried_cuMemcpyDtoDAsync_v2_ptsz(dst, src, n, stream);
}

/* ---- 2D copies ---- */

/* A 2D copy as it crosses: each side a device address or an array, or
 * the guest's memory (CU_MEMORYTYPE_HOST: its rows follow, width × height,
 * one after another, or come back so); its x, y and pitch are then the
 * packed rows'. */
static CUresult send_2d(unsigned slot, const CUDA_MEMCPY2D *c, const CUstream *stream)
{
    bool from_guest = c->srcMemoryType == CU_MEMORYTYPE_HOST, to_guest = c->dstMemoryType == CU_MEMORYTYPE_HOST;
    size_t width = c->WidthInBytes, bytes = width * c->Height;
    struct vgpu_in_cuMemcpy2DAsync_v2 in = {
        .srcMemoryType = c->srcMemoryType,
        .srcXInBytes = from_guest ? 0 : c->srcXInBytes,
        .srcY = from_guest ? 0 : c->srcY,
        .src = c->srcMemoryType == CU_MEMORYTYPE_ARRAY ? (uint64_t)(uintptr_t)c->srcArray : c->srcDevice,
        .srcPitch = from_guest ? width : c->srcPitch,
        .dstMemoryType = c->dstMemoryType,
        .dstXInBytes = to_guest ? 0 : c->dstXInBytes,
        .dstY = to_guest ? 0 : c->dstY,
        .dst = c->dstMemoryType == CU_MEMORYTYPE_ARRAY ? (uint64_t)(uintptr_t)c->dstArray : c->dstDevice,
        .dstPitch = to_guest ? width : c->dstPitch,
        .WidthInBytes = width,
        .Height = c->Height,
        .hStream = stream ? *stream : NULL,
    };
    char *packed = NULL;
    if (from_guest || to_guest) {
        packed = malloc(bytes ? bytes : 1);
        if (!packed)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (from_guest && bytes)
        for (size_t y = 0; y < c->Height; y++)
            memcpy(packed + y * width, (const char *)c->srcHost + (c->srcY + y) * c->srcPitch + c->srcXInBytes, width);
    in.rows = packed;
    in.rows_size = from_guest ? bytes : 0;
    struct vgpu_out_cuMemcpy2DAsync_v2 out = { .tail = packed, .tail_size = to_guest ? bytes : 0 };
    CUresult r = stream && !to_guest ? vgpu_remote_send_cuMemcpy2DAsync_v2(slot, 0, &in)
                                     : vgpu_remote_call_cuMemcpy2DAsync_v2(slot, 0, &in, &out);
    if (r == CUDA_SUCCESS && to_guest && out.rows_size != bytes)
        r = CUDA_ERROR_UNKNOWN;
    if (r == CUDA_SUCCESS && to_guest && bytes)
        for (size_t y = 0; y < c->Height; y++)
            memcpy((char *)c->dstHost + (c->dstY + y) * c->dstPitch + c->dstXInBytes, packed + y * width, width);
    free(packed);
    return r;
}

/* A 2D copy's side named by address (unified, or the device's) that is the
 * guest's memory becomes host memory at that address. */
static void guest_side(CUmemorytype *type, CUdeviceptr address, const void **host)
{
    CUmemorytype named = *type;
    if (*type == CU_MEMORYTYPE_UNIFIED)
        *type = on_device(address) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    if (*type == CU_MEMORYTYPE_DEVICE && guest_block(address))
        *type = CU_MEMORYTYPE_HOST;
    if (named != CU_MEMORYTYPE_HOST && *type == CU_MEMORYTYPE_HOST)
        *host = (const void *)(uintptr_t)address;
}

/* A 2D copy: a unified address resolved to the guest's memory or the GPU's;
 * guest to guest the guest's own, after the stream's work; else in parts
 * whose guest bytes fit a chunk (rows, or pieces of one row). */
static CUresult copy_2d(unsigned slot, const CUDA_MEMCPY2D *copy, const CUstream *stream)
{
    if (!copy)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY2D c = *copy;
    const void *src = c.srcHost;
    guest_side(&c.srcMemoryType, c.srcDevice, &src);
    c.srcHost = src;
    const void *dst = c.dstHost;
    guest_side(&c.dstMemoryType, c.dstDevice, &dst);
    c.dstHost = (void *)dst;
    bool from_guest = c.srcMemoryType == CU_MEMORYTYPE_HOST, to_guest = c.dstMemoryType == CU_MEMORYTYPE_HOST;
    if (!c.WidthInBytes || !c.Height)
        return from_guest && to_guest ? CUDA_SUCCESS : send_2d(slot, &c, stream);
    if (!(from_guest || to_guest))
        return send_2d(slot, &c, stream);
    /* The guest's side is read or written here: it must hold the rows. */
    if ((from_guest && (!c.srcHost || c.srcPitch < c.WidthInBytes)) ||
        (to_guest && (!c.dstHost || c.dstPitch < c.WidthInBytes)))
        return CUDA_ERROR_INVALID_VALUE;
    if (from_guest && to_guest) {
        CUresult r = stream ? VGPU_REMOTE_CUDA(cuStreamSynchronize)(*stream) : CUDA_SUCCESS;
        for (size_t y = 0; r == CUDA_SUCCESS && y < c.Height; y++)
            memmove((char *)c.dstHost + (c.dstY + y) * c.dstPitch + c.dstXInBytes,
                    (const char *)c.srcHost + (c.srcY + y) * c.srcPitch + c.srcXInBytes, c.WidthInBytes);
        return r;
    }
    size_t piece = c.WidthInBytes < VGPU_REMOTE_CHUNK ? c.WidthInBytes : VGPU_REMOTE_CHUNK;
    size_t rows = piece == c.WidthInBytes ? VGPU_REMOTE_CHUNK / piece : 1;
    for (size_t y = 0; y < c.Height; y += rows) {
        for (size_t x = 0; x < c.WidthInBytes; x += piece) {
            CUDA_MEMCPY2D part = c;
            part.srcXInBytes += x;
            part.dstXInBytes += x;
            part.srcY += y;
            part.dstY += y;
            part.WidthInBytes = c.WidthInBytes - x < piece ? c.WidthInBytes - x : piece;
            part.Height = c.Height - y < rows ? c.Height - y : rows;
            CUresult r = send_2d(slot, &part, stream);
            if (r != CUDA_SUCCESS)
                return r;
        }
    }
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemcpy2D_v2(const CUDA_MEMCPY2D *copy)
{
    return copy_2d(SLOT(cuMemcpy2D_v2), copy, NULL);
}

CUresult vgpu_remote_guest_cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *copy)
{
    return copy_2d(SLOT(cuMemcpy2D_v2), copy, NULL);
}

CUresult vgpu_remote_guest_cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *copy)
{
    return copy_2d(SLOT(cuMemcpy2DUnaligned_v2), copy, NULL);
}

CUresult vgpu_remote_guest_cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *copy)
{
    return copy_2d(SLOT(cuMemcpy2DUnaligned_v2), copy, NULL);
}

CUresult vgpu_remote_guest_cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *copy, CUstream stream)
{
    return copy_2d(SLOT(cuMemcpy2DAsync_v2), copy, &stream);
}

CUresult vgpu_remote_guest_cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *copy, CUstream stream)
{
    stream = vgpu_remote_per_thread(stream);
    return copy_2d(SLOT(cuMemcpy2DAsync_v2), copy, &stream);
}

/* ---- 3D copies ---- */

/* A 3D copy as it crosses: as a 2D one, the guest's side packed, a layer
 * of height rows after another. */
static CUresult send_3d(unsigned slot, const CUDA_MEMCPY3D *c, const CUstream *stream)
{
    bool from_guest = c->srcMemoryType == CU_MEMORYTYPE_HOST, to_guest = c->dstMemoryType == CU_MEMORYTYPE_HOST;
    size_t width = c->WidthInBytes, depth = c->Depth ? c->Depth : 1, layer = width * c->Height;
    size_t bytes = layer * depth;
    struct vgpu_in_cuMemcpy3DAsync_v2 in = {
        .srcMemoryType = c->srcMemoryType,
        .srcXInBytes = from_guest ? 0 : c->srcXInBytes,
        .srcY = from_guest ? 0 : c->srcY,
        .srcZ = from_guest ? 0 : c->srcZ,
        .src = c->srcMemoryType == CU_MEMORYTYPE_ARRAY ? (uint64_t)(uintptr_t)c->srcArray : c->srcDevice,
        .srcPitch = from_guest ? width : c->srcPitch,
        .srcHeight = from_guest ? c->Height : c->srcHeight,
        .dstMemoryType = c->dstMemoryType,
        .dstXInBytes = to_guest ? 0 : c->dstXInBytes,
        .dstY = to_guest ? 0 : c->dstY,
        .dstZ = to_guest ? 0 : c->dstZ,
        .dst = c->dstMemoryType == CU_MEMORYTYPE_ARRAY ? (uint64_t)(uintptr_t)c->dstArray : c->dstDevice,
        .dstPitch = to_guest ? width : c->dstPitch,
        .dstHeight = to_guest ? c->Height : c->dstHeight,
        .WidthInBytes = width,
        .Height = c->Height,
        .Depth = c->Depth,
        .hStream = stream ? *stream : NULL,
    };
    char *packed = NULL;
    if ((from_guest || to_guest) && !(packed = malloc(bytes ? bytes : 1)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t z = 0; from_guest && z < depth; z++)
        for (size_t y = 0; y < c->Height; y++)
            memcpy(packed + z * layer + y * width,
                   (const char *)c->srcHost + ((c->srcZ + z) * c->srcHeight + c->srcY + y) * c->srcPitch +
                       c->srcXInBytes,
                   width);
    in.rows = packed;
    in.rows_size = from_guest ? bytes : 0;
    struct vgpu_out_cuMemcpy3DAsync_v2 out = { .tail = packed, .tail_size = to_guest ? bytes : 0 };
    CUresult r = stream && !to_guest ? vgpu_remote_send_cuMemcpy3DAsync_v2(slot, 0, &in)
                                     : vgpu_remote_call_cuMemcpy3DAsync_v2(slot, 0, &in, &out);
    if (r == CUDA_SUCCESS && to_guest && out.rows_size != bytes)
        r = CUDA_ERROR_UNKNOWN;
    for (size_t z = 0; r == CUDA_SUCCESS && to_guest && z < depth; z++)
        for (size_t y = 0; y < c->Height; y++)
            memcpy((char *)c->dstHost + ((c->dstZ + z) * c->dstHeight + c->dstY + y) * c->dstPitch + c->dstXInBytes,
                   packed + z * layer + y * width, width);
    free(packed);
    return r;
}

/* A 3D copy: unified addresses resolved as a 2D copy's; guest memory on both
 * sides the guest's own, after the stream's work; else in parts whose guest
 * bytes fit a chunk (layers, or a layer's rows, or pieces of one row). */
static CUresult copy_3d(unsigned slot, const CUDA_MEMCPY3D *copy, const CUstream *stream)
{
    if (!copy)
        return CUDA_ERROR_INVALID_VALUE;
    if (copy->srcLOD || copy->dstLOD)
        return vgpu_remote_refuse_why(slot, "a mipmap level of an array is not carried");
    CUDA_MEMCPY3D c = *copy;
    const void *src = c.srcHost;
    guest_side(&c.srcMemoryType, c.srcDevice, &src);
    c.srcHost = src;
    const void *dst = c.dstHost;
    guest_side(&c.dstMemoryType, c.dstDevice, &dst);
    c.dstHost = (void *)dst;
    bool from_guest = c.srcMemoryType == CU_MEMORYTYPE_HOST, to_guest = c.dstMemoryType == CU_MEMORYTYPE_HOST;
    size_t depth = c.Depth ? c.Depth : 1;
    if (!c.WidthInBytes || !c.Height || !(from_guest || to_guest))
        return from_guest && to_guest ? CUDA_SUCCESS : send_3d(slot, &c, stream);
    /* The guest's side is read or written here: it must hold the rows and layers. */
    if ((from_guest && (!c.srcHost || c.srcPitch < c.WidthInBytes || (depth > 1 && c.srcHeight < c.Height))) ||
        (to_guest && (!c.dstHost || c.dstPitch < c.WidthInBytes || (depth > 1 && c.dstHeight < c.Height))))
        return CUDA_ERROR_INVALID_VALUE;
    if (from_guest && to_guest) {
        CUresult r = stream ? VGPU_REMOTE_CUDA(cuStreamSynchronize)(*stream) : CUDA_SUCCESS;
        for (size_t z = 0; r == CUDA_SUCCESS && z < depth; z++)
            for (size_t y = 0; y < c.Height; y++)
                memmove((char *)c.dstHost + ((c.dstZ + z) * c.dstHeight + c.dstY + y) * c.dstPitch + c.dstXInBytes,
                        (const char *)c.srcHost + ((c.srcZ + z) * c.srcHeight + c.srcY + y) * c.srcPitch +
                            c.srcXInBytes,
                        c.WidthInBytes);
        return r;
    }
    size_t layer = c.WidthInBytes * c.Height;
    if (c.WidthInBytes <= VGPU_REMOTE_CHUNK && c.Height <= VGPU_REMOTE_CHUNK / c.WidthInBytes) {
        size_t layers = VGPU_REMOTE_CHUNK / layer; /* whole layers a message */
        for (size_t z = 0; z < depth; z += layers) {
            CUDA_MEMCPY3D part = c;
            part.srcZ += z;
            part.dstZ += z;
            part.Depth = depth - z < layers ? depth - z : layers;
            CUresult r = send_3d(slot, &part, stream);
            if (r != CUDA_SUCCESS)
                return r;
        }
        return CUDA_SUCCESS;
    }
    size_t piece = c.WidthInBytes < VGPU_REMOTE_CHUNK ? c.WidthInBytes : VGPU_REMOTE_CHUNK;
    size_t rows = piece == c.WidthInBytes ? VGPU_REMOTE_CHUNK / piece : 1;
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < c.Height; y += rows)
            for (size_t x = 0; x < c.WidthInBytes; x += piece) {
                CUDA_MEMCPY3D part = c;
                part.srcXInBytes += x;
                part.dstXInBytes += x;
                part.srcY += y;
                part.dstY += y;
                part.srcZ += z;
                part.dstZ += z;
                part.WidthInBytes = c.WidthInBytes - x < piece ? c.WidthInBytes - x : piece;
                part.Height = c.Height - y < rows ? c.Height - y : rows;
                part.Depth = 1;
                CUresult r = send_3d(slot, &part, stream);
                if (r != CUDA_SUCCESS)
                    return r;
            }
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemcpy3D_v2(const CUDA_MEMCPY3D *copy)
{
    return copy_3d(SLOT(cuMemcpy3D_v2), copy, NULL);
}

CUresult vgpu_remote_guest_cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *copy)
{
    return copy_3d(SLOT(cuMemcpy3D_v2), copy, NULL);
}

CUresult vgpu_remote_guest_cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *copy, CUstream stream)
{
    return copy_3d(SLOT(cuMemcpy3DAsync_v2), copy, &stream);
}

CUresult vgpu_remote_guest_cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *copy, CUstream stream)
{
    stream = vgpu_remote_per_thread(stream);
    return copy_3d(SLOT(cuMemcpy3DAsync_v2), copy, &stream);
}

/* ---- an array and the guest's memory: a chunk a message ---- */

static CUresult host_to_array(CUarray a, size_t off, const void *src, size_t n, const CUstream *stream)
{
    if (!src && n)
        return CUDA_ERROR_INVALID_VALUE;
    size_t done = 0;
    do {
        size_t part = n - done < VGPU_REMOTE_CHUNK ? n - done : VGPU_REMOTE_CHUNK;
        const char *from = (const char *)src + done;
        CUresult r;
        if (stream) {
            struct vgpu_in_cuMemcpyHtoAAsync_v2 in = { .dstArray = a, .dstOffset = off + done, .ByteCount = part,
                                                       .hStream = *stream, .srcHost = from, .srcHost_size = part };
            r = (CUresult)vgpu_remote_send_cuMemcpyHtoAAsync_v2(SLOT(cuMemcpyHtoAAsync_v2), 0, &in);
        } else {
            struct vgpu_in_cuMemcpyHtoA_v2 in = { .dstArray = a, .dstOffset = off + done, .ByteCount = part,
                                                  .srcHost = from, .srcHost_size = part };
            struct vgpu_out_cuMemcpyHtoA_v2 out;
            r = (CUresult)vgpu_remote_call_cuMemcpyHtoA_v2(SLOT(cuMemcpyHtoA_v2), 0, &in, &out);
        }
        if (r != CUDA_SUCCESS)
            return r;
        done += part;
    } while (done < n);
    return CUDA_SUCCESS;
}

static CUresult array_to_host(void *dst, CUarray a, size_t off, size_t n)
{
    if (!dst && n)
        return CUDA_ERROR_INVALID_VALUE;
    size_t done = 0;
    do {
        size_t part = n - done < VGPU_REMOTE_CHUNK ? n - done : VGPU_REMOTE_CHUNK;
        struct vgpu_in_cuMemcpyAtoH_v2 in = { .srcArray = a, .srcOffset = off + done, .ByteCount = part };
        struct vgpu_out_cuMemcpyAtoH_v2 out = { .dstHost = (char *)dst + done, .dstHost_size = part };
        CUresult r = (CUresult)vgpu_remote_call_cuMemcpyAtoH_v2(SLOT(cuMemcpyAtoH_v2), 0, &in, &out);
        if (r != CUDA_SUCCESS)
            return r;
        done += part;
    } while (done < n);
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemcpyHtoA_v2(CUarray a, size_t off, const void *src, size_t n)
{
    return host_to_array(a, off, src, n, NULL);
}

CUresult vgpu_remote_guest_cuMemcpyHtoA_v2_ptds(CUarray a, size_t off, const void *src, size_t n)
{
    return host_to_array(a, off, src, n, NULL);
}

CUresult vgpu_remote_guest_cuMemcpyHtoAAsync_v2(CUarray a, size_t off, const void *src, size_t n, CUstream stream)
{
    return host_to_array(a, off, src, n, &stream);
}

CUresult vgpu_remote_guest_cuMemcpyHtoAAsync_v2_ptsz(CUarray a, size_t off, const void *src, size_t n,
                                                     CUstream stream)
{
    stream = vgpu_remote_per_thread(stream);
    return host_to_array(a, off, src, n, &stream);
}

CUresult vgpu_remote_guest_cuMemcpyAtoH_v2(void *dst, CUarray a, size_t off, size_t n)
{
    return array_to_host(dst, a, off, n);
}

CUresult vgpu_remote_guest_cuMemcpyAtoH_v2_ptds(void *dst, CUarray a, size_t off, size_t n)
{
    return array_to_host(dst, a, off, n);
}

/* To the guest's memory, which is written when the reply comes: the
 * stream's work first, then the copy. */
CUresult vgpu_remote_guest_cuMemcpyAtoHAsync_v2(void *dst, CUarray a, size_t off, size_t n, CUstream stream)
{
    CUresult r = VGPU_REMOTE_CUDA(cuStreamSynchronize)(stream);
    return r == CUDA_SUCCESS ? array_to_host(dst, a, off, n) : r;
}

CUresult vgpu_remote_guest_cuMemcpyAtoHAsync_v2_ptsz(void *dst, CUarray a, size_t off, size_t n, CUstream stream)
{
    return vgpu_remote_guest_cuMemcpyAtoHAsync_v2(dst, a, off, n, vgpu_remote_per_thread(stream));
}
