/*
 * Copies, the executor's side (the guest's: forwarder/remote/guest/cuda/copy.c;
 * what crosses: docs/design/remote.md).  Every device range is one of the guest's
 * allocations, every stream one it was given, every length at most a
 * chunk.  The guest's bytes are in the executor's pageable memory, from
 * which the driver has taken them when an asynchronous copy returns, and
 * into which a copy from the device is done when it returns; but not on a
 * stream being captured, where the copy would become a graph's node that
 * reads or writes that memory at each of the graph's launches, long after
 * it is freed: an asynchronous copy to or from the guest is refused there
 * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), as copies from pageable memory
 * are in graphs the driver cannot keep pinned.  A 2D copy's device side is
 * checked from its first row's start to its last row's end.  A copy to or
 * from a block the guest shared (shared_host.c) names it, and is the
 * driver's own, captured or not.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include "common/log.h"
#include "forwarder/remote/transport/wire.h"

#include <stdlib.h>

typedef CUresult (*to_device_fn)(CUdeviceptr, const void *, size_t, CUstream);

/* Whether stream is being captured (or its capture was invalidated): a
 * stream the driver cannot say of is, for this purpose.  The first such
 * copy of a guest is logged. */
static bool capturing(struct vgpu_exec *x, uint64_t stream, const char *call)
{
    CUresult (*is)(CUstream, CUstreamCaptureStatus *) =
        (CUresult(*)(CUstream, CUstreamCaptureStatus *))vgpu_exec_function_named(x, "cuStreamIsCapturing");
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    bool yes = !is || is((CUstream)(uintptr_t)stream, &st) != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
    if (yes && !x->said_capture) {
        x->said_capture = true;
        vgpu_warn("executor: %s on a stream being captured: refused, a graph cannot keep the guest's bytes (and "
                  "any more such, unsaid)",
                  call);
    }
    return yes;
}
typedef CUresult (*to_host_fn)(void *, CUdeviceptr, size_t, CUstream);

/* A copy between the device and a block the guest shared (shared_host.c):
 * [device][n]([stream])[the guest's address]; the driver's own copy from
 * or to where the executor has the block, which may be captured. */
static int shared(struct vgpu_exec *x, void *fn, const void *req, size_t len, unsigned words, bool to_dev,
                  const char *call)
{
    if (len != (words + 1) * 8)
        return vgpu_exec_malformed(call, len);
    uint64_t dev = vgpu_exec_word(req, 0), n = vgpu_exec_word(req, 1), stream = words == 3 ? vgpu_exec_word(req, 2) : 0;
    void *host = vgpu_exec_shared_at(x, vgpu_exec_word(req, words), n);
    if (words == 3 && !vgpu_exec_handle_known(x, stream, true))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_HANDLE, NULL, 0);
    if (!host || (n && !vgpu_exec_device_range(x, dev, n, call)))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    vgpu_debug("executor: %s of a shared block, %llu bytes", call, (unsigned long long)n);
    CUstream s = (CUstream)(uintptr_t)stream;
    int r = to_dev ? (words == 3 ? ((to_device_fn)fn)(dev, host, n, s)
                                 : ((CUresult(*)(CUdeviceptr, const void *, size_t))fn)(dev, host, n))
                   : (words == 3 ? ((to_host_fn)fn)(host, dev, n, s)
                                 : ((CUresult(*)(void *, CUdeviceptr, size_t))fn)(host, dev, n));
    return vgpu_exec_reply(x, r, NULL, 0);
}

/* [dst][n]([stream]) and n bytes; words: 2, or 3 with a stream. */
static int to_device(struct vgpu_exec *x, void *fn, const void *req, size_t len, unsigned words, const char *call)
{
    if (x->shared_host)
        return shared(x, fn, req, len, words, true, call);
    size_t head = words * 8;
    if (len < head || vgpu_exec_word(req, 1) != len - head)
        return vgpu_exec_malformed(call, len);
    uint64_t dst = vgpu_exec_word(req, 0), stream = words == 3 ? vgpu_exec_word(req, 2) : 0;
    if (words == 3 && !vgpu_exec_handle_known(x, stream, true))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_HANDLE, NULL, 0);
    if (words == 3 && capturing(x, stream, call))
        return vgpu_exec_reply(x, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, NULL, 0);
    if (len > head && !vgpu_exec_device_range(x, dst, len - head, call))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    const char *src = (const char *)req + head;
    int r = words == 3 ? ((to_device_fn)fn)(dst, src, len - head, (CUstream)(uintptr_t)stream)
                       : ((CUresult(*)(CUdeviceptr, const void *, size_t))fn)(dst, src, len - head);
    return vgpu_exec_reply(x, r, NULL, 0);
}

/* [src][n]([stream]): n bytes back. */
static int to_host(struct vgpu_exec *x, void *fn, const void *req, size_t len, unsigned words, const char *call)
{
    if (x->shared_host)
        return shared(x, fn, req, len, words, false, call);
    if (len != words * 8 || vgpu_exec_word(req, 1) > VGPU_REMOTE_CHUNK)
        return vgpu_exec_malformed(call, len);
    uint64_t src = vgpu_exec_word(req, 0), stream = words == 3 ? vgpu_exec_word(req, 2) : 0;
    size_t n = vgpu_exec_word(req, 1);
    if (words == 3 && !vgpu_exec_handle_known(x, stream, true))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_HANDLE, NULL, 0);
    if (words == 3 && capturing(x, stream, call))
        return vgpu_exec_reply(x, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, NULL, 0);
    if (n && !vgpu_exec_device_range(x, src, n, call))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    void *buf = calloc(1, n ? n : 1); /* zeroed: nothing of the executor's goes back, whatever the driver writes */
    if (!buf)
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    int r = words == 3 ? ((to_host_fn)fn)(buf, src, n, (CUstream)(uintptr_t)stream)
                       : ((CUresult(*)(void *, CUdeviceptr, size_t))fn)(buf, src, n);
    struct iovec v = { buf, r == CUDA_SUCCESS ? n : 0 };
    int sent = vgpu_exec_reply(x, r, &v, 1);
    free(buf);
    return sent;
}

int vgpu_exec_cuMemcpyHtoD_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return to_device(x, fn, req, len, 2, "cuMemcpyHtoD_v2");
}

int vgpu_exec_cuMemcpyDtoH_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return to_host(x, fn, req, len, 2, "cuMemcpyDtoH_v2");
}

int vgpu_exec_cuMemcpyHtoDAsync_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return to_device(x, fn, req, len, 3, "cuMemcpyHtoDAsync_v2");
}

int vgpu_exec_cuMemcpyDtoHAsync_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return to_host(x, fn, req, len, 3, "cuMemcpyDtoHAsync_v2");
}

/* ---- 2D copies ---- */

/* One side of a 2D copy: a device range of the guest's (from its start,
 * (height - 1) pitches and a width), an array it was given, or the guest's
 * bytes in the executor's buffer.  0, or the code to reply. */
static int side_2d(struct vgpu_exec *x, uint64_t type, uint64_t xb, uint64_t y, uint64_t at, uint64_t pitch,
                   uint64_t width, uint64_t height, const char *call)
{
    if (type == CU_MEMORYTYPE_ARRAY)
        return at && vgpu_exec_handle_known(x, at, false) ? 0 : CUDA_ERROR_INVALID_HANDLE;
    if (type != CU_MEMORYTYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!width || !height)
        return 0;
    uint64_t start;
    if (__builtin_mul_overflow(y, pitch, &start) || __builtin_add_overflow(start, xb, &start) ||
        __builtin_add_overflow(start, at, &start))
        return CUDA_ERROR_INVALID_VALUE;
    return vgpu_exec_device_rows(x, start, pitch, width, 1, height, call) ? 0 : CUDA_ERROR_INVALID_VALUE;
}

/* The words of forwarder/remote/guest/cuda/copy.c's send_2d, then the guest's
 * bytes when the source is its memory; the destination's bytes back when
 * it is.  Guest memory on both sides is the guest's to copy. */
static int copy_2d(struct vgpu_exec *x, void *fn, const void *req, size_t len, bool async, const char *call)
{
    if (len < VGPU_REMOTE_2D_WORDS * 8)
        return vgpu_exec_malformed(call, len);
    uint64_t w[VGPU_REMOTE_2D_WORDS];
    for (unsigned i = 0; i < VGPU_REMOTE_2D_WORDS; i++)
        w[i] = vgpu_exec_word(req, i);
    bool from_guest = w[0] == CU_MEMORYTYPE_HOST, to_guest = w[5] == CU_MEMORYTYPE_HOST;
    uint64_t width = w[10], height = w[11], stream = w[12], bytes = 0;
    if ((from_guest || to_guest) &&
        (from_guest == to_guest || __builtin_mul_overflow(width, height, &bytes) || bytes > VGPU_REMOTE_CHUNK))
        return vgpu_exec_malformed(call, len);
    if (len != VGPU_REMOTE_2D_WORDS * 8 + (from_guest ? bytes : 0))
        return vgpu_exec_malformed(call, len);
    CUDA_MEMCPY2D c = {
        .srcMemoryType = (CUmemorytype)w[0],
        .srcXInBytes = from_guest ? 0 : w[1],
        .srcY = from_guest ? 0 : w[2],
        .srcPitch = from_guest ? width : w[4],
        .dstMemoryType = (CUmemorytype)w[5],
        .dstXInBytes = to_guest ? 0 : w[6],
        .dstY = to_guest ? 0 : w[7],
        .dstPitch = to_guest ? width : w[9],
        .WidthInBytes = width,
        .Height = height,
    };
    int r = 0;
    if (async && !vgpu_exec_handle_known(x, stream, true))
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == 0 && async && (from_guest || to_guest) && capturing(x, stream, call))
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (r == 0 && !from_guest)
        r = side_2d(x, w[0], w[1], w[2], w[3], w[4], width, height, call);
    if (r == 0 && !to_guest)
        r = side_2d(x, w[5], w[6], w[7], w[8], w[9], width, height, call);
    if (r != 0)
        return vgpu_exec_reply(x, r, NULL, 0);
    if (from_guest)
        c.srcHost = (const char *)req + VGPU_REMOTE_2D_WORDS * 8;
    else if (c.srcMemoryType == CU_MEMORYTYPE_ARRAY)
        c.srcArray = (CUarray)(uintptr_t)w[3];
    else
        c.srcDevice = w[3];
    void *buf = NULL;
    if (to_guest && !(buf = calloc(1, bytes ? bytes : 1))) /* zeroed: nothing of the executor's goes back */
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    if (to_guest)
        c.dstHost = buf;
    else if (c.dstMemoryType == CU_MEMORYTYPE_ARRAY)
        c.dstArray = (CUarray)(uintptr_t)w[8];
    else
        c.dstDevice = w[8];
    r = async ? ((CUresult(*)(const CUDA_MEMCPY2D *, CUstream))fn)(&c, (CUstream)(uintptr_t)stream)
              : ((CUresult(*)(const CUDA_MEMCPY2D *))fn)(&c);
    struct iovec v = { buf, r == CUDA_SUCCESS && to_guest ? bytes : 0 };
    int sent = vgpu_exec_reply(x, r, &v, 1);
    free(buf);
    return sent;
}

int vgpu_exec_cuMemcpy2D_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return copy_2d(x, fn, req, len, false, "cuMemcpy2D_v2");
}

int vgpu_exec_cuMemcpy2DUnaligned_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return copy_2d(x, fn, req, len, false, "cuMemcpy2DUnaligned_v2");
}

int vgpu_exec_cuMemcpy2DAsync_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return copy_2d(x, fn, req, len, true, "cuMemcpy2DAsync_v2");
}
