/*
 * Executable graphs and a graph's description, the executor's side (the
 * guest's: forwarder/remote/guest/cuda/graphs/exec.c; the messages:
 * forwarder/remote/spec/cuda.remote).  The nodes an instantiation or an
 * update names in its result become the guest's handles, whatever the call
 * returned (the graph's own nodes, which the guest may not have been
 * given: a captured graph's).  cuGraphDebugDotPrint writes into a memfd of
 * the executor's, named by /proc/self/fd, whose bytes go back: the guest's
 * path is never the executor's to open.
 */
#define _GNU_SOURCE
#include "forwarder/remote/executor/cuda/graphs/graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int vgpu_exec_cuGraphInstantiateWithParams(struct vgpu_exec *x, void *fn,
                                           const struct vgpu_in_cuGraphInstantiateWithParams *in)
{
    CUDA_GRAPH_INSTANTIATE_PARAMS p = { .flags = in->flags, .hUploadStream = in->hUploadStream };
    struct vgpu_out_cuGraphInstantiateWithParams out = { 0 };
    int r =
        ((CUresult(*)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *))fn)(&out.phGraphExec, in->hGraph, &p);
    out.result = (uint32_t)p.result_out;
    out.errNode = (uint64_t)(uintptr_t)p.hErrNode_out;
    vgpu_exec_handle_add(x, out.errNode);
    return vgpu_exec_reply_cuGraphInstantiateWithParams(x, r, in, &out);
}

int vgpu_exec_cuGraphExecUpdate_v2(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphExecUpdate_v2 *in)
{
    CUgraphExecUpdateResultInfo info = { .result = CU_GRAPH_EXEC_UPDATE_ERROR };
    int r = ((CUresult(*)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *))fn)(in->hGraphExec, in->hGraph, &info);
    struct vgpu_out_cuGraphExecUpdate_v2 out = {
        .result = (uint32_t)info.result,
        .errorNode = (uint64_t)(uintptr_t)info.errorNode,
        .errorFromNode = (uint64_t)(uintptr_t)info.errorFromNode,
    };
    vgpu_exec_handle_add(x, out.errorNode);
    vgpu_exec_handle_add(x, out.errorFromNode);
    return vgpu_exec_reply_cuGraphExecUpdate_v2(x, r, in, &out);
}

/* The most a DOT file may be: past it, CUDA_ERROR_NOT_SUPPORTED. */
#define DOT_MAX (16u << 20)

int vgpu_exec_cuGraphDebugDotPrint(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGraphDebugDotPrint *in)
{
    int fd = memfd_create("vgpu-graph-dot", MFD_CLOEXEC);
    if (fd < 0)
        return vgpu_exec_reply(x, CUDA_ERROR_OPERATING_SYSTEM, NULL, 0);
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    int r = ((CUresult(*)(CUgraph, const char *, unsigned))fn)(in->hGraph, path, in->flags);
    struct stat st;
    char *dot = NULL;
    size_t n = 0;
    if (r == 0 && fstat(fd, &st) != 0)
        r = CUDA_ERROR_OPERATING_SYSTEM;
    else if (r == 0 && (uint64_t)st.st_size > DOT_MAX)
        r = CUDA_ERROR_NOT_SUPPORTED;
    else if (r == 0 && !(dot = malloc(st.st_size ? (size_t)st.st_size : 1)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    while (r == 0 && n < (size_t)st.st_size) {
        ssize_t got = pread(fd, dot + n, (size_t)st.st_size - n, (off_t)n);
        if (got <= 0)
            break; /* what the file holds, as it was written */
        n += (size_t)got;
    }
    close(fd);
    struct vgpu_out_cuGraphDebugDotPrint out = { .dot = dot, .dot_size = n };
    int sent = vgpu_exec_reply_cuGraphDebugDotPrint(x, r, in, &out);
    free(dot);
    return sent;
}
