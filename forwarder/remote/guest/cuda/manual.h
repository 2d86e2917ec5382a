/* The remote CUDA driver's hand-written calls, the guest's side (this folder's files; listed in manual.list). */
#pragma once

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* The remote driver's own function of a public call, for the hand-written
 * calls that make others (needs forwarder/dispatch.h and vgpu_cuda_slots.h). */
#define VGPU_REMOTE_CUDA(name) ((__typeof__(&name))vgpu_cuda.remote[VGPU_CUDA_SLOT_##name])

/* Error strings and the lookup (lookup.c). */
CUresult vgpu_remote_guest_cuGetErrorName(CUresult error, const char **pStr);
CUresult vgpu_remote_guest_cuGetErrorString(CUresult error, const char **pStr);
CUresult vgpu_remote_guest_cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                               CUdriverProcAddressQueryResult *status);
CUresult vgpu_remote_guest_cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);
/* The driver's private tables, emulated in the guest (private/export_tables.c). */
CUresult vgpu_remote_guest_cuGetExportTable(const void **table, const CUuuid *id);
/* cuBLASLt's private table (private/device_layout.c). */
extern const void *const vgpu_remote_cublaslt_table[];

/* Modules and libraries (library.c). */
CUresult vgpu_remote_guest_cuModuleLoadData(CUmodule *module, const void *image);
CUresult vgpu_remote_guest_cuModuleLoadDataEx(CUmodule *module, const void *code, unsigned int n, CUjit_option *options,
                                              void **values);
CUresult vgpu_remote_guest_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult vgpu_remote_guest_cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name);
CUresult vgpu_remote_guest_cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                             void **jitOptionsValues, unsigned int numJitOptions,
                                             CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                             unsigned int numLibraryOptions);
CUresult vgpu_remote_guest_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name);
CUresult vgpu_remote_guest_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name);
/* Wraps the carried cuLibraryUnload: the library's kernels end with it. */
CUresult vgpu_remote_wrapped_cuLibraryUnload(CUlibrary library);
/* Whether f is a library's kernel this process was given (cuLibraryGetKernel). */
bool vgpu_remote_is_kernel(const void *f);

/* Copies (copy.c). */
CUresult vgpu_remote_guest_cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n);
CUresult vgpu_remote_guest_cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n);
CUresult vgpu_remote_guest_cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n);
CUresult vgpu_remote_guest_cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n);
CUresult vgpu_remote_guest_cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult vgpu_remote_guest_cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult vgpu_remote_guest_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream);
CUresult vgpu_remote_guest_cuMemcpy2D_v2(const CUDA_MEMCPY2D *copy);
CUresult vgpu_remote_guest_cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *copy);
CUresult vgpu_remote_guest_cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *copy);
CUresult vgpu_remote_guest_cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *copy);
CUresult vgpu_remote_guest_cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *copy, CUstream stream);
CUresult vgpu_remote_guest_cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *copy, CUstream stream);

/* Launches, occupancy and host functions (launch.c). */
CUresult vgpu_remote_guest_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                          unsigned bz, unsigned shmem, CUstream stream, void **params, void **extra);
CUresult vgpu_remote_guest_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                               unsigned by, unsigned bz, unsigned shmem, CUstream stream, void **params,
                                               void **extra);
CUresult vgpu_remote_guest_cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                                     unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                                                     void **params);
CUresult vgpu_remote_guest_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                          unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                                          CUstream stream, void **params);
CUresult vgpu_remote_guest_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra);
CUresult vgpu_remote_guest_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params,
                                                 void **extra);
CUresult vgpu_remote_guest_cuOccupancyMaxActiveClusters(int *numClusters, CUfunction f, const CUlaunchConfig *config);
CUresult vgpu_remote_guest_cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *data);
CUresult vgpu_remote_guest_cuLaunchHostFunc_ptsz(CUstream stream, CUhostFn fn, void *data);
CUresult vgpu_remote_guest_cuStreamAddCallback(CUstream stream, CUstreamCallback cb, void *data, unsigned flags);
CUresult vgpu_remote_guest_cuStreamAddCallback_ptsz(CUstream stream, CUstreamCallback cb, void *data, unsigned flags);

/* The stream a per-thread (_ptsz) call means: 0 is the calling thread's default stream. */
static inline CUstream vgpu_remote_per_thread(CUstream s)
{
    return s ? s : CU_STREAM_PER_THREAD;
}

/* Page-locked and registered host memory (host_memory.c). */
CUresult vgpu_remote_guest_cuMemAllocHost_v2(void **pp, size_t n);
CUresult vgpu_remote_guest_cuMemAllocHost(void **pp, unsigned int n);
CUresult vgpu_remote_guest_cuMemHostAlloc(void **pp, size_t n, unsigned int flags);
CUresult vgpu_remote_guest_cuMemFreeHost(void *p);
CUresult vgpu_remote_guest_cuMemHostRegister_v2(void *p, size_t n, unsigned int flags);
CUresult vgpu_remote_guest_cuMemHostRegister(void *p, size_t n, unsigned int flags);
CUresult vgpu_remote_guest_cuMemHostUnregister(void *p);
CUresult vgpu_remote_guest_cuMemHostGetFlags(unsigned int *flags, void *p);
CUresult vgpu_remote_guest_cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int flags);
/* Whether p lies in a block of page-locked or registered host memory: its
 * start, size and whether it was asked for as mapped. */
bool vgpu_remote_host_block(const void *p, void **base, size_t *size, bool *mapped);
/* Whether the n bytes at p lie in one block shared with the executor,
 * which copies name by address (VGPU_REMOTE_SHARED). */
bool vgpu_remote_host_shared(const void *p, size_t n);

/* Pointers' attributes (pointer.c). */
CUresult vgpu_remote_guest_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
CUresult vgpu_remote_guest_cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                                  void **data, CUdeviceptr ptr);

/* Stream capture's state (capture.c). */
CUresult vgpu_remote_guest_cuStreamGetCaptureInfo_v3(CUstream stream, CUstreamCaptureStatus *status, cuuint64_t *id,
                                                     CUgraph *graph, const CUgraphNode **deps,
                                                     const CUgraphEdgeData **edges, size_t *count);
CUresult vgpu_remote_guest_cuStreamGetCaptureInfo_v3_ptsz(CUstream stream, CUstreamCaptureStatus *status,
                                                          cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
                                                          const CUgraphEdgeData **edges, size_t *count);
CUresult vgpu_remote_guest_cuStreamGetCaptureInfo_v2(CUstream stream, CUstreamCaptureStatus *status, cuuint64_t *id,
                                                     CUgraph *graph, const CUgraphNode **deps, size_t *count);
CUresult vgpu_remote_guest_cuStreamGetCaptureInfo_v2_ptsz(CUstream stream, CUstreamCaptureStatus *status,
                                                          cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
                                                          size_t *count);

/* Graphs' node and edge arrays (graph.c). */
CUresult vgpu_remote_guest_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *num);
CUresult vgpu_remote_guest_cuGraphGetRootNodes(CUgraph g, CUgraphNode *nodes, size_t *num);
CUresult vgpu_remote_guest_cuGraphGetEdges(CUgraph g, CUgraphNode *from, CUgraphNode *to, size_t *num);
CUresult vgpu_remote_guest_cuGraphGetEdges_v2(CUgraph g, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edges,
                                              size_t *num);
CUresult vgpu_remote_guest_cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode *deps, size_t *num);
CUresult vgpu_remote_guest_cuGraphNodeGetDependencies_v2(CUgraphNode node, CUgraphNode *deps, CUgraphEdgeData *edges,
                                                         size_t *num);
CUresult vgpu_remote_guest_cuGraphNodeGetDependentNodes(CUgraphNode node, CUgraphNode *deps, size_t *num);
CUresult vgpu_remote_guest_cuGraphNodeGetDependentNodes_v2(CUgraphNode node, CUgraphNode *deps, CUgraphEdgeData *edges,
                                                           size_t *num);

/* Virtual memory management (vmm.c). */
CUresult vgpu_remote_guest_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                               unsigned long long flags);
CUresult vgpu_remote_guest_cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult vgpu_remote_guest_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                         CUmemAllocationGranularity_flags option);
CUresult vgpu_remote_guest_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                       const CUmemAllocationProp *prop, unsigned long long flags);
CUresult vgpu_remote_guest_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);

/* Tensor maps (tensor_map.c). */
CUresult vgpu_remote_guest_cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                                  void *address, const cuuint64_t *dim, const cuuint64_t *strides,
                                                  const cuuint32_t *box, const cuuint32_t *element_strides,
                                                  CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                                  CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob);
CUresult vgpu_remote_guest_cuTensorMapEncodeIm2col(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                                   void *address, const cuuint64_t *dim, const cuuint64_t *strides,
                                                   const int *lower, const int *upper, cuuint32_t channels,
                                                   cuuint32_t pixels, const cuuint32_t *element_strides,
                                                   CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                                   CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob);
CUresult vgpu_remote_guest_cuTensorMapEncodeIm2colWide(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                                       void *address, const cuuint64_t *dim, const cuuint64_t *strides,
                                                       int lower, int upper, cuuint32_t channels, cuuint32_t pixels,
                                                       const cuuint32_t *element_strides,
                                                       CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
                                                       CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                                       CUtensorMapFloatOOBfill oob);
CUresult vgpu_remote_guest_cuTensorMapReplaceAddress(CUtensorMap *map, void *address);

/* Memsets of the guest's own page-locked memory, done in the guest (memset.c). */
CUresult vgpu_remote_wrapped_cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n);
CUresult vgpu_remote_wrapped_cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char value, size_t n);
CUresult vgpu_remote_wrapped_cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream);
CUresult vgpu_remote_wrapped_cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream);
CUresult vgpu_remote_wrapped_cuMemsetD2D8_v2(CUdeviceptr dst, size_t pitch, unsigned char value, size_t w, size_t h);
CUresult vgpu_remote_wrapped_cuMemsetD2D8_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned char value, size_t w,
                                                  size_t h);
CUresult vgpu_remote_wrapped_cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char value, size_t w, size_t h,
                                               CUstream stream);
CUresult vgpu_remote_wrapped_cuMemsetD2D8Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned char value, size_t w,
                                                    size_t h, CUstream stream);
CUresult vgpu_remote_wrapped_cuMemsetD16_v2(CUdeviceptr dst, unsigned short value, size_t n);
CUresult vgpu_remote_wrapped_cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short value, size_t n);
CUresult vgpu_remote_wrapped_cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t n, CUstream stream);
CUresult vgpu_remote_wrapped_cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short value, size_t n, CUstream stream);
CUresult vgpu_remote_wrapped_cuMemsetD2D16_v2(CUdeviceptr dst, size_t pitch, unsigned short value, size_t w, size_t h);
CUresult vgpu_remote_wrapped_cuMemsetD2D16_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned short value, size_t w,
                                                   size_t h);
CUresult vgpu_remote_wrapped_cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short value, size_t w, size_t h,
                                                CUstream stream);
CUresult vgpu_remote_wrapped_cuMemsetD2D16Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned short value, size_t w,
                                                     size_t h, CUstream stream);
CUresult vgpu_remote_wrapped_cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t n);
CUresult vgpu_remote_wrapped_cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int value, size_t n);
CUresult vgpu_remote_wrapped_cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, CUstream stream);
CUresult vgpu_remote_wrapped_cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int value, size_t n, CUstream stream);
CUresult vgpu_remote_wrapped_cuMemsetD2D32_v2(CUdeviceptr dst, size_t pitch, unsigned int value, size_t w, size_t h);
CUresult vgpu_remote_wrapped_cuMemsetD2D32_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned int value, size_t w,
                                                   size_t h);
CUresult vgpu_remote_wrapped_cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int value, size_t w, size_t h,
                                                CUstream stream);
CUresult vgpu_remote_wrapped_cuMemsetD2D32Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned int value, size_t w,
                                                     size_t h, CUstream stream);

/* Device-to-device copies, a side of which may be the guest's own memory (copy.c). */
CUresult vgpu_remote_wrapped_cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult vgpu_remote_wrapped_cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult vgpu_remote_wrapped_cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream);
CUresult vgpu_remote_wrapped_cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream);
