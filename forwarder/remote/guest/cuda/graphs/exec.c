/*
 * Executable graphs and a graph's description, the guest's side
 * (forwarder/remote/executor/cuda/graphs/exec.c is the other; the
 * messages: forwarder/remote/spec/cuda.remote): the CUDA 10 and 11 forms of
 * instantiation, which are cuGraphInstantiateWithFlags's message; the
 * CUDA 12 one with its parameters; an update's result; and the DOT file
 * cuGraphDebugDotPrint writes, which the executor's driver writes into
 * memory of the executor's and the guest writes to its own path.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <stdio.h>
#include <stdlib.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

/* As cuGraphInstantiateWithFlags (flags 0): no error node (NULL) and an
 * empty log, which is what the driver gives when it succeeds. */
static CUresult instantiate_logged(CUgraphExec *exec, CUgraph graph, CUgraphNode *error_node, char *log, size_t size)
{
    CUresult r = VGPU_REMOTE_CUDA(cuGraphInstantiateWithFlags)(exec, graph, 0);
    if (error_node)
        *error_node = NULL;
    if (log && size)
        log[0] = 0;
    return r;
}

CUresult vgpu_remote_guest_cuGraphInstantiate(CUgraphExec *exec, CUgraph graph, CUgraphNode *error_node, char *log,
                                              size_t size)
{
    return instantiate_logged(exec, graph, error_node, log, size);
}

CUresult vgpu_remote_guest_cuGraphInstantiate_v2(CUgraphExec *exec, CUgraph graph, CUgraphNode *error_node, char *log,
                                                 size_t size)
{
    return instantiate_logged(exec, graph, error_node, log, size);
}

/* The result and the error node come back whatever the call returned. */
CUresult vgpu_remote_guest_cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph graph,
                                                        CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    if (!exec || !p)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuGraphInstantiateWithParams in = { .hGraph = graph,
                                                       .flags = p->flags,
                                                       .hUploadStream = p->hUploadStream };
    struct vgpu_out_cuGraphInstantiateWithParams out = { .result = CUDA_GRAPH_INSTANTIATE_ERROR };
    CUresult r =
        (CUresult)vgpu_remote_call_cuGraphInstantiateWithParams(SLOT(cuGraphInstantiateWithParams), 0, &in, &out);
    p->result_out = (CUgraphInstantiateResult)out.result;
    p->hErrNode_out = (CUgraphNode)(uintptr_t)out.errNode;
    if (r == CUDA_SUCCESS)
        *exec = out.phGraphExec;
    return r;
}

CUresult vgpu_remote_guest_cuGraphInstantiateWithParams_ptsz(CUgraphExec *exec, CUgraph graph,
                                                             CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_GRAPH_INSTANTIATE_PARAMS q = *p;
    q.hUploadStream = vgpu_remote_per_thread(q.hUploadStream);
    CUresult r = vgpu_remote_guest_cuGraphInstantiateWithParams(exec, graph, &q);
    p->result_out = q.result_out;
    p->hErrNode_out = q.hErrNode_out;
    return r;
}

/* The result info's nodes, whatever the call returned. */
CUresult vgpu_remote_guest_cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo *info)
{
    if (!info)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuGraphExecUpdate_v2 in = { .hGraphExec = exec, .hGraph = graph };
    struct vgpu_out_cuGraphExecUpdate_v2 out = { .result = CU_GRAPH_EXEC_UPDATE_ERROR };
    CUresult r = (CUresult)vgpu_remote_call_cuGraphExecUpdate_v2(SLOT(cuGraphExecUpdate_v2), 0, &in, &out);
    info->result = (CUgraphExecUpdateResult)out.result;
    info->errorNode = (CUgraphNode)(uintptr_t)out.errorNode;
    info->errorFromNode = (CUgraphNode)(uintptr_t)out.errorFromNode;
    return r;
}

/* The most a DOT file may be (the executor's bound). */
#define DOT_MAX (16u << 20)

/* The file's bytes come back; the guest writes them to its path (a path
 * it cannot write: CUDA_ERROR_OPERATING_SYSTEM, as the driver's). */
CUresult vgpu_remote_guest_cuGraphDebugDotPrint(CUgraph graph, const char *path, unsigned int flags)
{
    if (!path)
        return CUDA_ERROR_INVALID_VALUE;
    char *tail = malloc(DOT_MAX);
    if (!tail)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct vgpu_in_cuGraphDebugDotPrint in = { .hGraph = graph, .flags = flags };
    struct vgpu_out_cuGraphDebugDotPrint out = { .tail = tail, .tail_size = DOT_MAX };
    CUresult r = (CUresult)vgpu_remote_call_cuGraphDebugDotPrint(SLOT(cuGraphDebugDotPrint), 0, &in, &out);
    if (r == CUDA_SUCCESS) {
        FILE *f = fopen(path, "w");
        if (!f || (out.dot_size && fwrite(out.dot, 1, out.dot_size, f) != out.dot_size))
            r = CUDA_ERROR_OPERATING_SYSTEM;
        if (f && fclose(f) != 0)
            r = CUDA_ERROR_OPERATING_SYSTEM;
    }
    free(tail);
    return r;
}
