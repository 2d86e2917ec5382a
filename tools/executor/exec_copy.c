/*
 * Copies, the executor's side (the guest's: forwarder/remote/cuda/copy.c;
 * what crosses: docs/remote.md).  Every device range is one of the guest's
 * allocations, every stream one it was given, every length at most a
 * chunk.  The guest's bytes are in the executor's pageable memory, from
 * which the driver has taken them when an asynchronous copy returns, and
 * into which a copy from the device is done when it returns; but not on a
 * stream being captured, where the copy would become a graph's node that
 * reads or writes that memory at each of the graph's launches, long after
 * it is freed: an asynchronous copy to or from the guest is refused there
 * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), as copies from pageable memory
 * are in graphs the driver cannot keep pinned.
 */
#include "tools/executor/exec_manual.h"

#include "common/log.h"
#include "forwarder/remote/wire.h"

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

/* [dst][n]([stream]) and n bytes; words: 2, or 3 with a stream. */
static int to_device(struct vgpu_exec *x, void *fn, const void *req, size_t len, unsigned words, const char *call)
{
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
