/*
 * Copies, the executor's side (the guest's: forwarder/remote/guest/cuda/copies/copy.c;
 * the messages: forwarder/remote/spec/cuda.remote).  Every device range is
 * one of the guest's allocations, every stream one it was given, every
 * length at most a chunk.  The guest's bytes are in the executor's pageable memory, from
 * which the driver has taken them when an asynchronous copy returns, and
 * into which a copy from the device is done when it returns; but not on a
 * stream being captured, where the copy would become a graph's node that
 * reads or writes that memory at each of the graph's launches, long after
 * it is freed: an asynchronous copy to or from the guest is refused there
 * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), as copies from pageable memory
 * are in graphs the driver cannot keep pinned.  A 2D copy's device side is
 * checked from its first row's start to its last row's end, a 3D copy's
 * over its layers.  A copy to or
 * from a block the guest shared (shared_host.c) names it, and is the
 * driver's own, captured or not.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include "common/log.h"
#include "forwarder/remote/transport/wire.h"

#include <stdlib.h>

typedef CUresult (*to_device_fn)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*to_host_fn)(void *, CUdeviceptr, size_t, CUstream);

/* Whether stream is being captured (or its capture was invalidated): a
 * stream the driver cannot say of is, for this purpose.  The first such
 * copy of a guest is logged. */
static bool capturing(struct vgpu_exec *x, CUstream stream, const char *call)
{
    CUresult (*is)(CUstream, CUstreamCaptureStatus *) =
        (CUresult(*)(CUstream, CUstreamCaptureStatus *))vgpu_exec_function_named(x, "cuStreamIsCapturing");
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    bool yes = !is || is(stream, &st) != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
    if (yes && vgpu_exec_say_once(x, &x->s->said_capture))
        vgpu_warn("executor: %s on a stream being captured: refused, a graph cannot keep the guest's bytes (and "
                  "any more such, unsaid)",
                  call);
    return yes;
}

/* A copy between the device and the guest's memory, as the calls of both
 * directions and both kinds have it: the device side, the length, the
 * stream (asynchronous copies only), and where the guest's side is: its
 * bytes in the executor's buffer, or a block it shared (shared_at). */
struct copy {
    CUdeviceptr dev;
    size_t n;
    CUstream stream;
    bool async;
    const void *bytes;
    uint64_t shared_at;
};

/* A copy of a block the guest shared (shared_host.c): the driver's own copy
 * from or to where the executor has the block, which may be captured. */
static int shared(struct vgpu_exec *x, void *fn, const struct copy *c, bool to_dev, const char *call)
{
    void *host = vgpu_exec_shared_at(x, c->shared_at, c->n);
    if (!host || (c->n && !vgpu_exec_device_range(x, c->dev, c->n, call)))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    vgpu_debug("executor: %s of a shared block, %zu bytes", call, c->n);
    int r = to_dev ? (c->async ? ((to_device_fn)fn)(c->dev, host, c->n, c->stream)
                               : ((CUresult(*)(CUdeviceptr, const void *, size_t))fn)(c->dev, host, c->n))
                   : (c->async ? ((to_host_fn)fn)(host, c->dev, c->n, c->stream)
                               : ((CUresult(*)(void *, CUdeviceptr, size_t))fn)(host, c->dev, c->n));
    return vgpu_exec_reply(x, r, NULL, 0);
}

static int to_device(struct vgpu_exec *x, void *fn, const struct copy *c, const char *call)
{
    if (x->shared_host)
        return shared(x, fn, c, true, call);
    if (c->async && capturing(x, c->stream, call))
        return vgpu_exec_reply(x, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, NULL, 0);
    if (c->n && !vgpu_exec_device_range(x, c->dev, c->n, call))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    int r = c->async ? ((to_device_fn)fn)(c->dev, c->bytes, c->n, c->stream)
                     : ((CUresult(*)(CUdeviceptr, const void *, size_t))fn)(c->dev, c->bytes, c->n);
    return vgpu_exec_reply(x, r, NULL, 0);
}

int vgpu_exec_cuMemcpyHtoD_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpyHtoDAsync_v2 *in)
{
    const struct copy c = { in->dstDevice, in->ByteCount, NULL, false, in->srcHost, in->srcHost_shared };
    return to_device(x, fn, &c, "cuMemcpyHtoD_v2");
}

int vgpu_exec_cuMemcpyHtoDAsync_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpyHtoDAsync_v2 *in)
{
    const struct copy c = { in->dstDevice, in->ByteCount, in->hStream, true, in->srcHost, in->srcHost_shared };
    return to_device(x, fn, &c, "cuMemcpyHtoDAsync_v2");
}

/* The bytes back, at most a chunk of them. */
static int to_host(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpyDtoHAsync_v2 *in, bool async,
                   const char *call)
{
    const struct copy c = { in->srcDevice, in->ByteCount, async ? in->hStream : NULL, async, NULL, in->dstHost_shared };
    if (x->shared_host)
        return shared(x, fn, &c, false, call);
    if (c.n > VGPU_REMOTE_CHUNK)
        return vgpu_exec_malformed(call, c.n);
    if (async && capturing(x, c.stream, call))
        return vgpu_exec_reply(x, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, NULL, 0);
    if (c.n && !vgpu_exec_device_range(x, c.dev, c.n, call))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    void *buf = calloc(1, c.n ? c.n : 1); /* zeroed: nothing of the executor's goes back, whatever the driver writes */
    if (!buf)
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    int r = async ? ((to_host_fn)fn)(buf, c.dev, c.n, c.stream)
                  : ((CUresult(*)(void *, CUdeviceptr, size_t))fn)(buf, c.dev, c.n);
    struct vgpu_out_cuMemcpyDtoHAsync_v2 out = { .dstHost = buf };
    int sent = vgpu_exec_reply_cuMemcpyDtoHAsync_v2(x, r, in, &out);
    free(buf);
    return sent;
}

int vgpu_exec_cuMemcpyDtoH_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpyDtoHAsync_v2 *in)
{
    return to_host(x, fn, in, false, "cuMemcpyDtoH_v2");
}

int vgpu_exec_cuMemcpyDtoHAsync_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpyDtoHAsync_v2 *in)
{
    return to_host(x, fn, in, true, "cuMemcpyDtoHAsync_v2");
}

/* ---- 2D copies ---- */

/* One side of a 2D copy: a device range of the guest's (from its start,
 * (height - 1) pitches and a width), or an array it was given.  0, or the
 * code to reply. */
static int side_2d(struct vgpu_exec *x, uint32_t type, uint64_t xb, uint64_t y, uint64_t at, uint64_t pitch,
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

/* A 2D copy (what crosses: forwarder/remote/guest/cuda/copies/copy.c): the
 * guest's rows packed when the source is its memory; the destination's
 * back when it is.  Guest memory on both sides is the guest's to copy. */
static int copy_2d(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpy2DAsync_v2 *in, bool async,
                   const char *call)
{
    bool from_guest = in->srcMemoryType == CU_MEMORYTYPE_HOST, to_guest = in->dstMemoryType == CU_MEMORYTYPE_HOST;
    uint64_t width = in->WidthInBytes, height = in->Height, bytes = 0;
    if ((from_guest || to_guest) &&
        (from_guest == to_guest || __builtin_mul_overflow(width, height, &bytes) || bytes > VGPU_REMOTE_CHUNK))
        return vgpu_exec_malformed(call, in->rows_size);
    if (in->rows_size != (from_guest ? bytes : 0))
        return vgpu_exec_malformed(call, in->rows_size);
    CUDA_MEMCPY2D c = {
        .srcMemoryType = (CUmemorytype)in->srcMemoryType,
        .srcXInBytes = from_guest ? 0 : in->srcXInBytes,
        .srcY = from_guest ? 0 : in->srcY,
        .srcPitch = from_guest ? width : in->srcPitch,
        .dstMemoryType = (CUmemorytype)in->dstMemoryType,
        .dstXInBytes = to_guest ? 0 : in->dstXInBytes,
        .dstY = to_guest ? 0 : in->dstY,
        .dstPitch = to_guest ? width : in->dstPitch,
        .WidthInBytes = width,
        .Height = height,
    };
    int r = 0;
    if (async && (from_guest || to_guest) && capturing(x, in->hStream, call))
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (r == 0 && !from_guest)
        r = side_2d(x, in->srcMemoryType, in->srcXInBytes, in->srcY, in->src, in->srcPitch, width, height, call);
    if (r == 0 && !to_guest)
        r = side_2d(x, in->dstMemoryType, in->dstXInBytes, in->dstY, in->dst, in->dstPitch, width, height, call);
    if (r != 0)
        return vgpu_exec_reply(x, r, NULL, 0);
    if (from_guest)
        c.srcHost = in->rows;
    else if (c.srcMemoryType == CU_MEMORYTYPE_ARRAY)
        c.srcArray = (CUarray)(uintptr_t)in->src;
    else
        c.srcDevice = in->src;
    void *buf = NULL;
    if (to_guest && !(buf = calloc(1, bytes ? bytes : 1))) /* zeroed: nothing of the executor's goes back */
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    if (to_guest)
        c.dstHost = buf;
    else if (c.dstMemoryType == CU_MEMORYTYPE_ARRAY)
        c.dstArray = (CUarray)(uintptr_t)in->dst;
    else
        c.dstDevice = in->dst;
    r = async ? ((CUresult(*)(const CUDA_MEMCPY2D *, CUstream))fn)(&c, in->hStream)
              : ((CUresult(*)(const CUDA_MEMCPY2D *))fn)(&c);
    struct vgpu_out_cuMemcpy2DAsync_v2 out = { .rows = buf, .rows_size = to_guest ? bytes : 0 };
    int sent = vgpu_exec_reply_cuMemcpy2DAsync_v2(x, r, in, &out);
    free(buf);
    return sent;
}

int vgpu_exec_cuMemcpy2D_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpy2DAsync_v2 *in)
{
    return copy_2d(x, fn, in, false, "cuMemcpy2D_v2");
}

int vgpu_exec_cuMemcpy2DUnaligned_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpy2DAsync_v2 *in)
{
    return copy_2d(x, fn, in, false, "cuMemcpy2DUnaligned_v2");
}

int vgpu_exec_cuMemcpy2DAsync_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpy2DAsync_v2 *in)
{
    return copy_2d(x, fn, in, true, "cuMemcpy2DAsync_v2");
}

/* ---- 3D copies ---- */

/* One side of a 3D copy: as a 2D one's, over (depth - 1) layers of height
 * rows and height rows more. */
static int side_3d(struct vgpu_exec *x, uint32_t type, uint64_t xb, uint64_t y, uint64_t z, uint64_t at,
                   uint64_t pitch, uint64_t layer, uint64_t width, uint64_t height, uint64_t depth, const char *call)
{
    uint64_t first, rows;
    if (type != CU_MEMORYTYPE_DEVICE || !width || !height || !depth)
        return side_2d(x, type, xb, 0, at, pitch, width, height, call);
    if (__builtin_mul_overflow(z, layer, &first) || __builtin_add_overflow(first, y, &first) ||
        __builtin_mul_overflow(depth - 1, layer, &rows) || __builtin_add_overflow(rows, height, &rows))
        return CUDA_ERROR_INVALID_VALUE;
    return side_2d(x, type, xb, first, at, pitch, width, rows, call);
}

/* A 3D copy (what crosses: forwarder/remote/guest/cuda/copies/copy.c): as a 2D
 * copy, the guest's side packed, a layer after another. */
static int copy_3d(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpy3DAsync_v2 *in, bool async,
                   const char *call)
{
    bool from_guest = in->srcMemoryType == CU_MEMORYTYPE_HOST, to_guest = in->dstMemoryType == CU_MEMORYTYPE_HOST;
    uint64_t width = in->WidthInBytes, height = in->Height, depth = in->Depth ? in->Depth : 1, bytes = 0;
    if ((from_guest || to_guest) &&
        (from_guest == to_guest || __builtin_mul_overflow(width, height, &bytes) ||
         __builtin_mul_overflow(bytes, depth, &bytes) || bytes > VGPU_REMOTE_CHUNK))
        return vgpu_exec_malformed(call, in->rows_size);
    if (in->rows_size != (from_guest ? bytes : 0))
        return vgpu_exec_malformed(call, in->rows_size);
    CUDA_MEMCPY3D c = {
        .srcMemoryType = (CUmemorytype)in->srcMemoryType,
        .srcXInBytes = from_guest ? 0 : in->srcXInBytes,
        .srcY = from_guest ? 0 : in->srcY,
        .srcZ = from_guest ? 0 : in->srcZ,
        .srcPitch = from_guest ? width : in->srcPitch,
        .srcHeight = from_guest ? height : in->srcHeight,
        .dstMemoryType = (CUmemorytype)in->dstMemoryType,
        .dstXInBytes = to_guest ? 0 : in->dstXInBytes,
        .dstY = to_guest ? 0 : in->dstY,
        .dstZ = to_guest ? 0 : in->dstZ,
        .dstPitch = to_guest ? width : in->dstPitch,
        .dstHeight = to_guest ? height : in->dstHeight,
        .WidthInBytes = width,
        .Height = height,
        .Depth = in->Depth,
    };
    int r = 0;
    if (async && (from_guest || to_guest) && capturing(x, in->hStream, call))
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (r == 0 && !from_guest)
        r = side_3d(x, in->srcMemoryType, in->srcXInBytes, in->srcY, in->srcZ, in->src, in->srcPitch, in->srcHeight,
                    width, height, depth, call);
    if (r == 0 && !to_guest)
        r = side_3d(x, in->dstMemoryType, in->dstXInBytes, in->dstY, in->dstZ, in->dst, in->dstPitch, in->dstHeight,
                    width, height, depth, call);
    if (r != 0)
        return vgpu_exec_reply(x, r, NULL, 0);
    if (from_guest)
        c.srcHost = in->rows;
    else if (c.srcMemoryType == CU_MEMORYTYPE_ARRAY)
        c.srcArray = (CUarray)(uintptr_t)in->src;
    else
        c.srcDevice = in->src;
    void *buf = NULL;
    if (to_guest && !(buf = calloc(1, bytes ? bytes : 1))) /* zeroed: nothing of the executor's goes back */
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    if (to_guest)
        c.dstHost = buf;
    else if (c.dstMemoryType == CU_MEMORYTYPE_ARRAY)
        c.dstArray = (CUarray)(uintptr_t)in->dst;
    else
        c.dstDevice = in->dst;
    r = async ? ((CUresult(*)(const CUDA_MEMCPY3D *, CUstream))fn)(&c, in->hStream)
              : ((CUresult(*)(const CUDA_MEMCPY3D *))fn)(&c);
    struct vgpu_out_cuMemcpy3DAsync_v2 out = { .rows = buf, .rows_size = to_guest ? bytes : 0 };
    int sent = vgpu_exec_reply_cuMemcpy3DAsync_v2(x, r, in, &out);
    free(buf);
    return sent;
}

int vgpu_exec_cuMemcpy3D_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpy3DAsync_v2 *in)
{
    return copy_3d(x, fn, in, false, "cuMemcpy3D_v2");
}

int vgpu_exec_cuMemcpy3DAsync_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpy3DAsync_v2 *in)
{
    return copy_3d(x, fn, in, true, "cuMemcpy3DAsync_v2");
}

/* ---- arrays ---- */

/* Bytes of the guest's to an array on a stream: refused while the stream
 * is captured (the message's bytes would be the graph's), as a copy from
 * the guest to the device is.  The array is one the guest was given (the
 * message's check). */
int vgpu_exec_cuMemcpyHtoAAsync_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuMemcpyHtoAAsync_v2 *in)
{
    if (capturing(x, in->hStream, "cuMemcpyHtoAAsync_v2"))
        return vgpu_exec_reply(x, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, NULL, 0);
    CUresult r = ((CUresult(*)(CUarray, size_t, const void *, size_t, CUstream))fn)(
        (CUarray)(uintptr_t)in->dstArray, in->dstOffset, in->srcHost, in->ByteCount, in->hStream);
    return vgpu_exec_reply(x, r, NULL, 0);
}
