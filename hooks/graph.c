/*
 * Graph hooks: a graph may allocate device memory through its allocation
 * nodes, so instantiating one tells the backend what they take, destroying
 * it forgets that, and trimming the device's graph memory settles the
 * count (vgpu_backend/memory/graph_mem.c).  Launches are in launch.c.
 */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_cuda_slots.h"

static CUresult instantiated(const char *name, CUresult r, CUgraphExec *x, CUgraph g)
{
    if (r == CUDA_SUCCESS)
        vgpu_backend_graph_instantiated(*x, g);
    vgpu_trace(name, r, "%p -> %p", (void *)g, r ? NULL : (void *)*x);
    return r;
}

VGPU_EXPORT CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                        char *logBuffer, size_t bufferSize)
{
    return instantiated("cuGraphInstantiate",
                        VGPU_REAL_CUDA(cuGraphInstantiate)(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize),
                        phGraphExec, hGraph);
}

VGPU_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                           char *logBuffer, size_t bufferSize)
{
    return instantiated("cuGraphInstantiate_v2",
                        VGPU_REAL_CUDA(cuGraphInstantiate_v2)(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize),
                        phGraphExec, hGraph);
}

VGPU_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    return instantiated("cuGraphInstantiateWithFlags",
                        VGPU_REAL_CUDA(cuGraphInstantiateWithFlags)(phGraphExec, hGraph, flags), phGraphExec, hGraph);
}

VGPU_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return instantiated("cuGraphInstantiateWithParams",
                        VGPU_REAL_CUDA(cuGraphInstantiateWithParams)(phGraphExec, hGraph, instantiateParams),
                        phGraphExec, hGraph);
}

VGPU_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                       CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return instantiated("cuGraphInstantiateWithParams_ptsz",
                        VGPU_REAL_CUDA(cuGraphInstantiateWithParams_ptsz)(phGraphExec, hGraph, instantiateParams),
                        phGraphExec, hGraph);
}

VGPU_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    CUresult r = VGPU_REAL_CUDA(cuGraphExecDestroy)(hGraphExec);
    if (r == CUDA_SUCCESS)
        vgpu_backend_graph_destroyed(hGraphExec);
    vgpu_trace("cuGraphExecDestroy", r, "%p", (void *)hGraphExec);
    return r;
}

VGPU_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    CUresult r = VGPU_REAL_CUDA(cuDeviceGraphMemTrim)(device);
    if (r == CUDA_SUCCESS)
        vgpu_backend_graph_mem_trimmed(device);
    vgpu_trace("cuDeviceGraphMemTrim", r, "dev=%d", device);
    return r;
}
