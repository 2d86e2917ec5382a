/* The remote CUDA driver's calls written by hand, the guest's side (this
 * folder's files).  Which calls they are, and each one's request and reply,
 * are declared in forwarder/remote/spec/cuda.remote; the generated
 * vgpu_remote_cuda_guest.h declares the hand-written functions of the
 * calls the spec declares manual, and this header those of the carried
 * calls the guest wraps (their prototypes are the header's, which the spec
 * does not carry for a carried call) and what the files share. */
#pragma once

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forwarder/remote/spec/bounds.h"
#include "forwarder/remote/spec/versions.h"
#include "vgpu_remote_cuda_guest.h"

/* The remote driver's own function of a public call, for the hand-written
 * calls that make others (needs forwarder/dispatch.h and vgpu_cuda_slots.h). */
#define VGPU_REMOTE_CUDA(name) ((__typeof__(&name))vgpu_cuda.remote[VGPU_CUDA_SLOT_##name])

/* cuBLASLt's private table (private/device_layout.c). */
extern const void *const vgpu_remote_cublaslt_table[];
/* NVRTC's compute cache, kept in the guest (private/compile_cache.c). */
extern const void *const vgpu_remote_compile_cache_table[];

/* JIT options as they cross (modules/jit.c): each one's word (0 for a log
 * buffer), and the sizes of the logs that come back. */
struct vgpu_remote_jit {
    uint64_t words[VGPU_REMOTE_JIT_OPTIONS];
    size_t info, error;
};
/* The words of n options, or the call's refusal (slot's) of an option
 * that does not cross. */
CUresult vgpu_remote_jit_options(unsigned slot, unsigned n, const CUjit_option *options, void *const *values,
                                 struct vgpu_remote_jit *j);
/* What the JIT left: each output option's value (left[i]), and the logs
 * (the info log, then the error log) copied into the caller's buffers. */
void vgpu_remote_jit_results(unsigned n, const CUjit_option *options, void **values, const struct vgpu_remote_jit *j,
                             const uint64_t *left, const char *logs);

/* A file's bytes, a NUL after them (the caller frees them): 0, or the
 * call's code (slot's: refused past max bytes; unreadable: the driver's
 * "file not found") (modules/library.c). */
CUresult vgpu_remote_read_file(unsigned slot, const char *path, size_t max, char **bytes, size_t *n);
/* A link is the guest's until it completes (modules/link.c): its end too. */
CUresult vgpu_remote_guest_cuLinkDestroy(CUlinkState state);
/* Wraps the carried cuLibraryUnload: the library's kernels end with it (modules/library.c). */
CUresult vgpu_remote_guest_cuLibraryUnload(CUlibrary library);
/* Whether a stream capture the guest saw begin is open (capture.c). */
bool vgpu_remote_capturing(void);
/* A pageable copy of at least VGPU_REMOTE_STAGED_MIN bytes, staged through
 * page-locked blocks shared with the executor (copies/staged.c): true
 * with the copy's code in *r; false when it is to go in messages.  sync:
 * a synchronous copy, done when it returns. */
#define VGPU_REMOTE_STAGED_MIN (1u << 20)
bool vgpu_remote_staged_to_device(CUdeviceptr dst, const void *src, size_t n, CUstream stream, bool sync,
                                  CUresult *r);
bool vgpu_remote_staged_to_host(void *dst, CUdeviceptr src, size_t n, CUstream stream, CUresult *r);
/* Captures' begins and ends, counted, and whether a stream is capturing
 * (capture.c): carried calls the guest wraps. */
CUresult vgpu_remote_guest_cuStreamBeginCapture(CUstream stream);
CUresult vgpu_remote_guest_cuStreamBeginCapture_ptsz(CUstream stream);
CUresult vgpu_remote_guest_cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode);
CUresult vgpu_remote_guest_cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode);
CUresult vgpu_remote_guest_cuStreamEndCapture(CUstream stream, CUgraph *graph);
CUresult vgpu_remote_guest_cuStreamEndCapture_ptsz(CUstream stream, CUgraph *graph);
CUresult vgpu_remote_guest_cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status);
CUresult vgpu_remote_guest_cuStreamIsCapturing_ptsz(CUstream stream, CUstreamCaptureStatus *status);
/* Whether f is a library's kernel this process was given (cuLibraryGetKernel). */
bool vgpu_remote_is_kernel(const void *f);

/* The stream a per-thread (_ptsz) call means: 0 is the calling thread's default stream. */
static inline CUstream vgpu_remote_per_thread(CUstream s)
{
    return s ? s : CU_STREAM_PER_THREAD;
}

/* Whether p lies in a block of page-locked or registered host memory: its
 * start, size and whether it was asked for as mapped (host_memory.c). */
bool vgpu_remote_host_block(const void *p, void **base, size_t *size, bool *mapped);
/* Whether the n bytes at p lie in one block shared with the executor,
 * which copies name by address (VGPU_REMOTE_SHARED). */
bool vgpu_remote_host_shared(const void *p, size_t n);
/* The block at p holds nothing to keep across a fork: a child of fork gets
 * fresh memory there instead of a copy (copies/staged.c's blocks). */
void vgpu_remote_host_scratch(const void *p);

/* Memsets of the guest's own page-locked memory, done in the guest (copies/memset.c). */
CUresult vgpu_remote_guest_cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n);
CUresult vgpu_remote_guest_cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char value, size_t n);
CUresult vgpu_remote_guest_cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemsetD2D8_v2(CUdeviceptr dst, size_t pitch, unsigned char value, size_t w, size_t h);
CUresult vgpu_remote_guest_cuMemsetD2D8_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned char value, size_t w,
                                                  size_t h);
CUresult vgpu_remote_guest_cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char value, size_t w, size_t h,
                                               CUstream stream);
CUresult vgpu_remote_guest_cuMemsetD2D8Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned char value, size_t w,
                                                    size_t h, CUstream stream);
CUresult vgpu_remote_guest_cuMemsetD16_v2(CUdeviceptr dst, unsigned short value, size_t n);
CUresult vgpu_remote_guest_cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short value, size_t n);
CUresult vgpu_remote_guest_cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short value, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemsetD2D16_v2(CUdeviceptr dst, size_t pitch, unsigned short value, size_t w, size_t h);
CUresult vgpu_remote_guest_cuMemsetD2D16_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned short value, size_t w,
                                                   size_t h);
CUresult vgpu_remote_guest_cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short value, size_t w, size_t h,
                                                CUstream stream);
CUresult vgpu_remote_guest_cuMemsetD2D16Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned short value, size_t w,
                                                     size_t h, CUstream stream);
CUresult vgpu_remote_guest_cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t n);
CUresult vgpu_remote_guest_cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int value, size_t n);
CUresult vgpu_remote_guest_cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int value, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemsetD2D32_v2(CUdeviceptr dst, size_t pitch, unsigned int value, size_t w, size_t h);
CUresult vgpu_remote_guest_cuMemsetD2D32_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned int value, size_t w,
                                                   size_t h);
CUresult vgpu_remote_guest_cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int value, size_t w, size_t h,
                                                CUstream stream);
CUresult vgpu_remote_guest_cuMemsetD2D32Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned int value, size_t w,
                                                     size_t h, CUstream stream);

/* Device-to-device copies, a side of which may be the guest's own memory (copy.c). */
CUresult vgpu_remote_guest_cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult vgpu_remote_guest_cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult vgpu_remote_guest_cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream);

/* A kernel's parameters as a launch's message carries them (launch.c): each
 * one's size, as the executor's driver gives it, then their bytes, each
 * padded to 8 (malloc'd: the caller frees them). */
#define VGPU_REMOTE_MAX_PARAMS 256
struct vgpu_remote_params {
    uint32_t count;
    uint32_t sizes[VGPU_REMOTE_MAX_PARAMS];
    char *bytes;
    size_t len;
};
/* f's parameters, given as an array (params) or as one buffer (extra),
 * packed: 0, or the code to return.  A graph's kernel node's cross so too. */
CUresult vgpu_remote_pack_params(CUfunction f, void **params, void **extra, struct vgpu_remote_params *out);

/* Graphs built by hand (graphs/): carried calls the guest wraps.  A node's
 * parameters the guest keeps go with the node or its graph (graphs/kept.c);
 * a memset node's parameters set cross as the generic calls' messages, whose
 * executor checks the destination (graphs/generic.c). */
CUresult vgpu_remote_guest_cuGraphDestroy(CUgraph hGraph);
CUresult vgpu_remote_guest_cuGraphDestroyNode(CUgraphNode hNode);
CUresult vgpu_remote_guest_cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *nodeParams);
CUresult vgpu_remote_guest_cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                          const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx);

