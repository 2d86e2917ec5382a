/* What the executor's files of graphs/ share: the memory a graph's node may
 * name (memory.c), and a kernel node's parameters as the driver takes them
 * (nodes.c). */
#pragma once

#include "forwarder/remote/executor/cuda/calls.h"

/* An allocation node's range, which the driver gave this guest's graph:
 * the guest's device memory from now on, for the nodes that name it before
 * and after the graph runs.  (An executor serves one guest: this is its.) */
void vgpu_exec_graph_allocated(uint64_t dptr, uint64_t size);
/* Whether p is the start of an allocation node's range. */
bool vgpu_exec_graph_allocation(uint64_t p);
/* Whether height rows of width elements of size bytes, pitch apart, from
 * p, are the guest's: its device memory (vgpu_exec_device_rows), or within
 * one allocation node's range. */
bool vgpu_exec_graph_rows(struct vgpu_exec *x, uint64_t p, uint64_t pitch, uint64_t width, uint64_t size,
                          uint64_t height, const char *call);

/* A copy node's parameters as the driver takes them, from the guest's:
 * each device side's rows and layers the guest's memory, each array one it
 * was given, each host side the guest's address of a block it shared,
 * given as the executor has it; no mipmap level.  0, or the code to reply. */
int vgpu_exec_graph_copy(struct vgpu_exec *x, const CUDA_MEMCPY3D *given, CUDA_MEMCPY3D *c, const char *call);
/* The guest's addresses of node's host sides, for its parameters got
 * (vgpu_exec_graph_copy_got): given as the guest gave them, c as the
 * executor gave them to the driver. */
void vgpu_exec_graph_copy_set(uint64_t node, const CUDA_MEMCPY3D *given, const CUDA_MEMCPY3D *c);
/* A copy node's parameters got from the driver, as the guest sees them: a
 * host side the guest's address (one the executor does not know: NULL). */
void vgpu_exec_graph_copy_got(struct vgpu_exec *x, uint64_t node, CUDA_MEMCPY3D *c);
/* Whether a memset node's destination is the guest's. */
bool vgpu_exec_graph_memset(struct vgpu_exec *x, CUdeviceptr dst, size_t pitch, unsigned element, size_t width,
                            size_t height, const char *call);

/* Whether a batch's n operations name only the guest's memory: a wait's
 * or a write's address (4 or 8 bytes) its device memory or an allocation
 * node's, an alias its device memory; a barrier and a flush none. */
bool vgpu_exec_graph_ops(struct vgpu_exec *x, const CUstreamBatchMemOpParams *ops, unsigned n, const char *call);

/* A kernel node's fields as a message carries them. */
struct vgpu_exec_kernel_node {
    uint64_t func, kern, ctx;
    uint32_t gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    uint32_t count;
    const uint32_t *sizes;
    const void *params;
    uint64_t params_size;
};
/* Those of a message that has them by these names. */
#define VGPU_EXEC_KERNEL_NODE(in)                                                                                      \
    (struct vgpu_exec_kernel_node)                                                                                     \
    {                                                                                                                  \
        .func = (in)->func, .kern = (in)->kern, .ctx = (in)->ctx, .gridDimX = (in)->gridDimX,                          \
        .gridDimY = (in)->gridDimY, .gridDimZ = (in)->gridDimZ, .blockDimX = (in)->blockDimX,                          \
        .blockDimY = (in)->blockDimY, .blockDimZ = (in)->blockDimZ, .sharedMemBytes = (in)->sharedMemBytes,            \
        .count = (in)->count, .sizes = (in)->sizes, .params = (in)->params, .params_size = (in)->params_size           \
    }
/* The node's parameters as the driver takes them, its kernelParams
 * pointers into the message (ptrs[VGPU_EXEC_MAX_PARAMS]): the kernel's
 * parameters as a launch's are taken (vgpu_exec_params_of).  0;
 * VGPU_EXEC_CLOSE, or the code to reply. */
int vgpu_exec_graph_kernel(struct vgpu_exec *x, const struct vgpu_exec_kernel_node *k, const char *call, void **ptrs,
                           CUDA_KERNEL_NODE_PARAMS *p);
