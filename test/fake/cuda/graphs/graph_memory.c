/*
 * Graph memory: allocation nodes, and the device's reserve behind them.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/graphs/graphs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* Per device, the memory graphs' allocation nodes reserve: grown at a
 * launch to what its graph allocates (graphs reuse it, as the driver's
 * graph pool does), given back by cuDeviceGraphMemTrim.  The fake frees
 * every allocation at the end of its graph, so none is in use between
 * launches.  Guarded by graph_mem_lock. */
static unsigned long long graph_reserve[FAKEGPU_MAX_DEVICES], graph_high[FAKEGPU_MAX_DEVICES];
static pthread_mutex_t graph_mem_lock = PTHREAD_MUTEX_INITIALIZER;

int fake_graph_mem_reserve(int dev, unsigned long long bytes)
{
    int rc = 0;
    pthread_mutex_lock(&graph_mem_lock);
    if (bytes > graph_reserve[dev]) {
        rc = fakegpu_state_charge(dev, bytes - graph_reserve[dev]);
        if (rc == 0)
            graph_reserve[dev] = bytes;
    }
    if (graph_reserve[dev] > graph_high[dev])
        graph_high[dev] = graph_reserve[dev];
    pthread_mutex_unlock(&graph_mem_lock);
    return rc;
}

CUresult fake_add_alloc_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                             size_t n, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    if (!p || p->bytesize == 0 || p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = p->poolProps.location.id;
    if (dev < 0 || dev >= fakegpu_config()->devices)
        return CUDA_ERROR_INVALID_DEVICE;
    struct fake_node *made;
    CUresult r = fake_graph_add(g, out, CU_GRAPH_NODE_TYPE_MEM_ALLOC, deps, edges, n, &made);
    if (r != CUDA_SUCCESS)
        return r;
    /* An address of its own, as the driver gives one at creation. */
    static _Atomic unsigned long long next = 0x7f0000000000ull;
    p->dptr = (CUdeviceptr)atomic_fetch_add(&next, (p->bytesize + 0xfffff) & ~0xfffffull);
    (*out)->dev = dev;
    (*out)->bytes = p->bytesize;
    (*out)->dptr = p->dptr;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    ENTER();
    return fake_add_alloc_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams);
}

CUresult fake_add_free_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                            size_t n, CUdeviceptr dptr)
{
    struct fake_node *made;
    CUresult r = fake_graph_add(g, out, CU_GRAPH_NODE_TYPE_MEM_FREE, deps, edges, n, &made);
    if (r == CUDA_SUCCESS)
        (*out)->dptr = dptr;
    return r;
}

CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                               size_t numDependencies, CUdeviceptr dptr)
{
    ENTER();
    return fake_add_free_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, dptr);
}

CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
    ENTER();
    if (!hNode || hNode->magic != GNODE_MAGIC || hNode->type != CU_GRAPH_NODE_TYPE_MEM_FREE || !dptr_out)
        return CUDA_ERROR_INVALID_VALUE;
    *dptr_out = hNode->dptr;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    ENTER();
    if (!hNode || hNode->magic != GNODE_MAGIC || hNode->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC || !params_out)
        return CUDA_ERROR_INVALID_VALUE;
    memset(params_out, 0, sizeof *params_out);
    params_out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params_out->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params_out->poolProps.location.id = hNode->dev;
    params_out->bytesize = hNode->bytes;
    params_out->dptr = hNode->dptr;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    ENTER();
    if (device < 0 || device >= fakegpu_config()->devices)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&graph_mem_lock);
    cuuint64_t v = attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT ? graph_reserve[device]
                   : attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH  ? graph_high[device]
                                                                  : 0; /* nothing in use between launches */
    pthread_mutex_unlock(&graph_mem_lock);
    *(cuuint64_t *)value = v;
    return CUDA_SUCCESS;
}

/* Only the high watermarks are set, and only to 0: back to what is held now. */
CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    ENTER();
    if (device < 0 || device >= fakegpu_config()->devices)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!value || *(const cuuint64_t *)value != 0 ||
        (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&graph_mem_lock);
    if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
        graph_high[device] = graph_reserve[device];
    pthread_mutex_unlock(&graph_mem_lock);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    ENTER();
    if (device < 0 || device >= fakegpu_config()->devices)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&graph_mem_lock);
    fakegpu_state_uncharge(device, graph_reserve[device]);
    graph_reserve[device] = 0;
    pthread_mutex_unlock(&graph_mem_lock);
    return CUDA_SUCCESS;
}
