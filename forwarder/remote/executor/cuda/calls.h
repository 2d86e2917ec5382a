/* The remote CUDA driver's hand-written calls, the executor's side (this folder's files;
 * listed in manual.list). */
#pragma once

#include "forwarder/remote/executor/executor.h"

#include <cuda.h>

int vgpu_exec_cuGetErrorName(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGetErrorString(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuModuleLoadData(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuModuleLoadDataEx(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuModuleGetFunction(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGetProcAddress_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGetProcAddress(struct vgpu_exec *x, void *fn, const void *req, size_t len);

/* Modules and libraries (library.c). */
int vgpu_exec_cuModuleGetGlobal_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuLibraryLoadData(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuLibraryGetKernel(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuLibraryGetGlobal(struct vgpu_exec *x, void *fn, const void *req, size_t len);

/* Copies (copy.c). */
int vgpu_exec_cuMemcpyHtoD_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemcpyDtoH_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemcpyHtoDAsync_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemcpyDtoHAsync_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemcpy2D_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemcpy2DUnaligned_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemcpy2DAsync_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);

/* Launches (launch.c). */
int vgpu_exec_cuLaunchKernel(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuLaunchKernelEx(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuLaunchCooperativeKernel(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuOccupancyMaxActiveClusters(struct vgpu_exec *x, void *fn, const void *req, size_t len);
/* Tensor maps, which kernels take (tensor_map.c). */
int vgpu_exec_cuTensorMapEncodeTiled(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuTensorMapEncodeIm2col(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuTensorMapEncodeIm2colWide(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuTensorMapReplaceAddress(struct vgpu_exec *x, void *fn, const void *req, size_t len);

/* Pointers' attributes (pointer.c). */
int vgpu_exec_cuPointerGetAttribute(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuPointerGetAttributes(struct vgpu_exec *x, void *fn, const void *req, size_t len);

/* Stream capture's state (capture.c). */
int vgpu_exec_cuStreamGetCaptureInfo_v3(struct vgpu_exec *x, void *fn, const void *req, size_t len);

/* Graphs' node and edge arrays (graph.c). */
int vgpu_exec_cuGraphGetNodes(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGraphGetRootNodes(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGraphGetEdges(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGraphGetEdges_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGraphNodeGetDependencies(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGraphNodeGetDependencies_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGraphNodeGetDependentNodes(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuGraphNodeGetDependentNodes_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);

/* Virtual memory management (vmm.c). */
int vgpu_exec_cuMemAddressReserve(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemAddressFree(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemGetAllocationGranularity(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemCreate(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_cuMemSetAccess(struct vgpu_exec *x, void *fn, const void *req, size_t len);

/* The driver's private tables (private/export_tables.c). */
int vgpu_exec_cuGetExportTable(struct vgpu_exec *x, void *fn, const void *req, size_t len);
/* How many bytes get(&a, &b) copies into each of the two chunks it takes
 * with malloc (release(a, b) frees them), learnt by calling it on chunks
 * filled two ways: CUDA_SUCCESS and *length (0 where this allocator does
 * not tell), or get's error. */
CUresult vgpu_exec_copied_length(void *get, void *release, size_t *length);
