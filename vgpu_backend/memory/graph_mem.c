/*
 * Graphs' memory nodes (docs/design/memory.md).  A CUDA graph may allocate device
 * memory itself: allocation nodes, from cuGraphAddMemAllocNode or from a
 * stream-ordered allocation captured into the graph (what PyTorch's and
 * JAX's graphs do).  The driver serves them from a reserve of its own per
 * device, grown when a graph that needs more is launched and kept for the
 * next launches until cuDeviceGraphMemTrim; no allocation call reports it.
 *
 * So each graph is read once, when it is instantiated: what its allocation
 * nodes take on each device.  A launch claims, before the driver call,
 * what the device's reserve may have to grow by (what the graph takes less
 * the reserve not in use), and is refused with CUDA_ERROR_OUT_OF_MEMORY
 * when that would pass the quota; afterwards the quota counts the reserve
 * as the driver reports it (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), as for
 * a pool's (pools.c).  Child graphs' nodes are not read (a graph node's
 * own graph): their memory is counted once the reserve holds it.
 */
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_backend/join/cuda_devices.h"
#include "vgpu_backend/memory/quota.h"
#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(VGPU_BACKEND_MAX_DEVICES == VGPU_MAX_DEVICES, "backend.h counts the devices a vGPU has");

struct exec_mem {
    CUgraphExec exec;
    uint64_t bytes[VGPU_GRAPH_MAX_DEVICES]; /* its allocation nodes, per CUDA device */
};

/* The instantiated graphs that allocate, and per CUDA device the reserve the
 * quota counts; all guarded by lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct exec_mem *execs;
static size_t nexecs, cap;
static uint64_t counted[VGPU_GRAPH_MAX_DEVICES];
static _Atomic bool seen; /* a graph that allocates was instantiated: reserves to count */

static uint64_t attribute(CUdevice dev, CUgraphMem_attribute a)
{
    cuuint64_t v = 0;
    return VGPU_REAL_CUDA(cuDeviceGetGraphMemAttribute)(dev, a, &v) == CUDA_SUCCESS ? v : 0;
}

/* Brings dev's count to its reserve now; called with lock held. */
static void resync(struct vgpu_self *self, CUdevice dev)
{
    int vdev = vgpu_cuda_vgpu_index(dev);
    if (vdev < 0)
        return;
    uint64_t now = attribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
    vgpu_bar0_recount(&self->bar0, vdev, counted[dev], now);
    counted[dev] = now;
}

static struct exec_mem *find(CUgraphExec x)
{
    for (size_t i = 0; i < nexecs; i++)
        if (execs[i].exec == x)
            return &execs[i];
    return NULL;
}

void vgpu_backend_graph_instantiated(CUgraphExec x, CUgraph g)
{
    if (!vgpu_self_on() || !x || !g)
        return;
    size_t n = 0;
    if (VGPU_REAL_CUDA(cuGraphGetNodes)(g, NULL, &n) != CUDA_SUCCESS || n == 0)
        return;
    CUgraphNode *nodes = malloc(n * sizeof(*nodes));
    if (!nodes || VGPU_REAL_CUDA(cuGraphGetNodes)(g, nodes, &n) != CUDA_SUCCESS) {
        free(nodes);
        return;
    }
    struct exec_mem e = { .exec = x };
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType type;
        CUDA_MEM_ALLOC_NODE_PARAMS p;
        if (VGPU_REAL_CUDA(cuGraphNodeGetType)(nodes[i], &type) != CUDA_SUCCESS || type != CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
            VGPU_REAL_CUDA(cuGraphMemAllocNodeGetParams)(nodes[i], &p) != CUDA_SUCCESS)
            continue;
        int dev = p.poolProps.location.id;
        if (p.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE && dev >= 0 && dev < VGPU_GRAPH_MAX_DEVICES) {
            e.bytes[dev] += p.bytesize;
            any = true;
        }
    }
    free(nodes);
    if (!any)
        return;
    pthread_mutex_lock(&lock);
    struct exec_mem *slot = find(x);
    if (!slot && nexecs == cap) {
        size_t more = cap ? 2 * cap : 16;
        struct exec_mem *grown = realloc(execs, more * sizeof(*grown));
        if (grown) {
            execs = grown;
            cap = more;
        }
    }
    if (!slot && nexecs < cap)
        slot = &execs[nexecs++];
    if (slot)
        *slot = e;
    else
        vgpu_warn("no room to note a graph's memory nodes: its launches claim nothing before the driver call");
    atomic_store(&seen, true);
    vgpu_quota_add_recount(vgpu_graph_mem_resync_all); /* a reserve to count before the quota refuses */
    pthread_mutex_unlock(&lock);
}

void vgpu_backend_graph_destroyed(CUgraphExec x)
{
    pthread_mutex_lock(&lock);
    struct exec_mem *e = find(x);
    if (e)
        *e = execs[--nexecs];
    pthread_mutex_unlock(&lock);
}

CUresult vgpu_backend_graph_launch_claim(CUgraphExec x, struct vgpu_graph_claim *c)
{
    c->allocates = false; /* the rest is written only for a graph that allocates: launches stay cheap */
    struct vgpu_self *self = atomic_load(&seen) ? vgpu_self_on() : NULL;
    if (!self)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct exec_mem *e = find(x);
    if (e)
        memcpy(c->device_bytes, e->bytes, sizeof(c->device_bytes));
    pthread_mutex_unlock(&lock);
    if (!e)
        return CUDA_SUCCESS;
    c->allocates = true;
    memset(c->claimed, 0, sizeof(c->claimed));
    for (CUdevice dev = 0; dev < VGPU_GRAPH_MAX_DEVICES; dev++) {
        int vdev = c->device_bytes[dev] ? vgpu_cuda_vgpu_index(dev) : -1;
        if (vdev < 0)
            continue;
        uint64_t reserved = attribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
        uint64_t used = attribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT);
        uint64_t idle = reserved > used ? reserved - used : 0;
        uint64_t growth = c->device_bytes[dev] > idle ? c->device_bytes[dev] - idle : 0;
        if (!growth)
            continue;
        if (!vgpu_quota_take(self, vdev, growth, "graph's memory nodes")) {
            vgpu_backend_graph_launch_settle(c);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        c->claimed[vdev] += growth;
    }
    return CUDA_SUCCESS;
}

void vgpu_backend_graph_launch_settle(const struct vgpu_graph_claim *c)
{
    struct vgpu_self *self = c->allocates ? vgpu_self_on() : NULL;
    if (!self)
        return;
    for (int v = 0; v < VGPU_MAX_DEVICES; v++)
        if (c->claimed[v])
            vgpu_bar0_give(&self->bar0, v, c->claimed[v]);
    pthread_mutex_lock(&lock);
    for (CUdevice dev = 0; dev < VGPU_GRAPH_MAX_DEVICES; dev++)
        if (c->device_bytes[dev])
            resync(self, dev);
    pthread_mutex_unlock(&lock);
}

void vgpu_graph_mem_resync_all(struct vgpu_self *self)
{
    int count = 0;
    if (!atomic_load(&seen) || VGPU_REAL_CUDA(cuDeviceGetCount)(&count) != CUDA_SUCCESS)
        return;
    pthread_mutex_lock(&lock);
    for (CUdevice dev = 0; dev < count && dev < VGPU_GRAPH_MAX_DEVICES; dev++)
        resync(self, dev);
    pthread_mutex_unlock(&lock);
}

void vgpu_backend_graph_mem_trimmed(CUdevice dev)
{
    struct vgpu_self *self = vgpu_self_on();
    if (!self || !atomic_load(&seen) || dev < 0 || dev >= VGPU_GRAPH_MAX_DEVICES)
        return;
    pthread_mutex_lock(&lock);
    resync(self, dev);
    pthread_mutex_unlock(&lock);
}
