/*
 * What the guest keeps of a graph's nodes: the arrays that the parameters
 * of a node point to when they come back (cuGraphKernelNodeGetParams's
 * kernelParams, cuGraphMemAllocNodeGetParams's accessDescs), which the
 * driver owns natively and which lie here in the guest's memory, a block
 * per node: the latest parameters got of it.  A get that brings the same
 * bytes gives the same block, so that the pointers given out stay good
 * while the node is unchanged; other bytes replace it.  A block goes with
 * its node (cuGraphDestroyNode) or the node's graph (cuGraphDestroy, which
 * asks the graph's nodes first when any block is kept); a node destroyed
 * another way (a child graph's, an executor's that ended) keeps its block
 * until the same handle is got again or the process ends.
 */
#include "forwarder/remote/guest/cuda/graphs/graphs.h"

#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Owned by this file, under kept_lock. */
struct kept {
    struct kept *next;
    CUgraphNode node;
    size_t head, n;
    /* head bytes, then the n bytes */
    _Alignas(16) unsigned char bytes[];
};
static struct kept *kept;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A child of fork may find the lock held by a thread it does not have; its
 * executor is another, which never gave it the parent's nodes: it starts
 * with none kept (the parent's blocks are left, not freed). */
static void child_after_fork(void)
{
    pthread_mutex_init(&kept_lock, NULL);
    kept = NULL;
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

void *vgpu_remote_graph_keep(CUgraphNode node, size_t head, const void *data, size_t n)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&kept_lock);
    struct kept **at = &kept;
    while (*at && (*at)->node != node)
        at = &(*at)->next;
    struct kept *k = *at;
    if (k && k->head == head && k->n == n && memcmp(k->bytes + head, data, n) == 0) {
        pthread_mutex_unlock(&kept_lock);
        return k->bytes;
    }
    struct kept *made = malloc(sizeof(*made) + head + n);
    if (made) {
        made->node = node;
        made->head = head;
        made->n = n;
        memset(made->bytes, 0, head);
        if (n)
            memcpy(made->bytes + head, data, n);
        made->next = k ? k->next : kept;
        if (k)
            *at = made;
        else
            kept = made;
        free(k);
    }
    pthread_mutex_unlock(&kept_lock);
    return made ? made->bytes : NULL;
}

/* The blocks of the n nodes go. */
static void forget(const CUgraphNode *nodes, size_t n)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&kept_lock);
    for (struct kept **at = &kept; *at;) {
        struct kept *k = *at;
        bool named = false;
        for (size_t i = 0; i < n && !named; i++)
            named = nodes[i] == k->node;
        if (named) {
            *at = k->next;
            free(k);
        } else {
            at = &k->next;
        }
    }
    pthread_mutex_unlock(&kept_lock);
}

static bool any_kept(void)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&kept_lock);
    bool any = kept != NULL;
    pthread_mutex_unlock(&kept_lock);
    return any;
}

CUresult vgpu_remote_guest_cuGraphDestroyNode(CUgraphNode node)
{
    CUresult r = (CUresult)vgpu_remote_carried_cuGraphDestroyNode(node);
    if (r == CUDA_SUCCESS)
        forget(&node, 1);
    return r;
}

/* The graph's nodes (at most as many as cuGraphGetNodes carries) are asked
 * for before it goes, when any node has a block kept. */
CUresult vgpu_remote_guest_cuGraphDestroy(CUgraph graph)
{
    CUgraphNode *nodes = NULL;
    size_t n = 0;
    if (any_kept() && VGPU_REMOTE_CUDA(cuGraphGetNodes)(graph, NULL, &n) == CUDA_SUCCESS && n) {
        size_t room = n > VGPU_IN_cuGraphGetEdges_v2_firstRoom_MAX ? VGPU_IN_cuGraphGetEdges_v2_firstRoom_MAX : n;
        nodes = calloc(room, sizeof(*nodes));
        n = room;
        if (!nodes || VGPU_REMOTE_CUDA(cuGraphGetNodes)(graph, nodes, &n) != CUDA_SUCCESS)
            n = 0;
        n = n < room ? n : room;
    }
    CUresult r = (CUresult)vgpu_remote_carried_cuGraphDestroy(graph);
    if (r == CUDA_SUCCESS && nodes)
        forget(nodes, n);
    free(nodes);
    return r;
}
