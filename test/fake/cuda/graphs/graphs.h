/*
 * What the fake's graph files share: a node's parameters, by its type; the
 * edges between a graph's nodes; an executable graph's steps, which a
 * launch replays.
 */
#ifndef FAKE_GRAPHS_H
#define FAKE_GRAPHS_H

#include "test/fake/cuda/fake_cuda.h"

/* A node added by hand (a captured kernel has none): its graph, and what its type does. */
#define FAKE_NODE_ATTRS 4
#define FAKE_NODE_OPS 16
struct fake_node {
    struct CUgraph_st *graph;
    /* CU_GRAPH_NODE_TYPE_KERNEL: the kernel and its arguments (each at most 8 bytes, as the built-in ones'). */
    CUDA_KERNEL_NODE_PARAMS kernel; /* kernelParams: args[], extra: NULL */
    unsigned long long args[FAKE_MAX_ARGS];
    void *arg_ptrs[FAKE_MAX_ARGS];
    struct {
        CUkernelNodeAttrID id; /* 0: none */
        CUkernelNodeAttrValue value;
    } attrs[FAKE_NODE_ATTRS];
    CUDA_MEMSET_NODE_PARAMS memset; /* CU_GRAPH_NODE_TYPE_MEMSET */
    CUDA_MEMCPY3D copy;             /* CU_GRAPH_NODE_TYPE_MEMCPY */
    CUcontext ctx;                  /* a memset's, a copy's */
    CUgraph child;                  /* CU_GRAPH_NODE_TYPE_GRAPH: a copy of the graph given */
    CUevent event;                  /* CU_GRAPH_NODE_TYPE_EVENT_RECORD, _WAIT_EVENT */
    /* CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: its operations (at most FAKE_NODE_OPS) and flags. */
    CUstreamBatchMemOpParams ops[FAKE_NODE_OPS];
    unsigned nops, op_flags;
};

/* An edge: from's work before to's. */
struct fake_edge {
    CUgraphNode from, to;
    CUgraphEdgeData data;
};

/* A live node of a graph made by hand (captured kernels' are not). */
FAKEGPU_HIDDEN int fake_graph_node_live(CUgraphNode n);
/* Adds a node of type t to g after the n nodes deps (their edges' data:
 * edges, or NULL for the default ones), its parameters a zeroed struct
 * fake_node (*made, to be filled).  0, or the code to return. */
FAKEGPU_HIDDEN CUresult fake_graph_add(CUgraph g, CUgraphNode *out, CUgraphNodeType t, const CUgraphNode *deps,
                                       const CUgraphEdgeData *edges, size_t n, struct fake_node **made);
/* Whether node is g's. */
FAKEGPU_HIDDEN int fake_graph_has(const struct CUgraph_st *g, CUgraphNode node);
/* A copy of graph g's nodes and edges (a child graph node's), or NULL. */
FAKEGPU_HIDDEN CUgraph fake_graph_copy(CUgraph g);
/* The n nodes of g in an order their edges allow (each after those it
 * depends on; else as added): a malloc'd array, or NULL (out of memory,
 * or a cycle). */
FAKEGPU_HIDDEN CUgraphNode *fake_graph_order(const struct CUgraph_st *g);

/* kernel_nodes.c: a kernel node's parameters checked and taken into n. */
FAKEGPU_HIDDEN CUresult fake_kernel_node_set(struct fake_node *n, const CUDA_KERNEL_NODE_PARAMS *p);
/* copy_nodes.c: a memset's and a copy's parameters checked and taken into n. */
FAKEGPU_HIDDEN CUresult fake_memset_node_set(struct fake_node *n, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx);
FAKEGPU_HIDDEN CUresult fake_copy_node_set(struct fake_node *n, const CUDA_MEMCPY3D *p, CUcontext ctx);
/* Adds a memset, copy or child graph node (copy_nodes.c, nodes.c). */
FAKEGPU_HIDDEN CUresult fake_add_memset_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                             const CUgraphEdgeData *edges, size_t n, const CUDA_MEMSET_NODE_PARAMS *p,
                                             CUcontext ctx);
FAKEGPU_HIDDEN CUresult fake_add_copy_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                           const CUgraphEdgeData *edges, size_t n, const CUDA_MEMCPY3D *p,
                                           CUcontext ctx);
FAKEGPU_HIDDEN CUresult fake_add_kernel_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                             const CUgraphEdgeData *edges, size_t n, const CUDA_KERNEL_NODE_PARAMS *p);
FAKEGPU_HIDDEN CUresult fake_add_child_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                            const CUgraphEdgeData *edges, size_t n, CUgraph child);
FAKEGPU_HIDDEN CUresult fake_add_event_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                            const CUgraphEdgeData *edges, size_t n, CUgraphNodeType t, CUevent e);
/* graph_memory.c */
FAKEGPU_HIDDEN CUresult fake_add_alloc_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                            const CUgraphEdgeData *edges, size_t n, CUDA_MEM_ALLOC_NODE_PARAMS *p);
FAKEGPU_HIDDEN CUresult fake_add_free_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                           const CUgraphEdgeData *edges, size_t n, CUdeviceptr dptr);

/* mem_op_nodes.c: a batch's operations checked (each address the fake's
 * memory) and taken into n; done on the host (a write's value written, a
 * wait's met at once: nothing else runs meanwhile). */
FAKEGPU_HIDDEN CUresult fake_mem_op_node_set(struct fake_node *n, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p);
FAKEGPU_HIDDEN void fake_mem_ops_run(const struct fake_node *n);

/* exec.c: sets an executable graph's copy of node's parameters to n's
 * (the node's type's own: kernel, memset, copy). */
FAKEGPU_HIDDEN CUresult fake_exec_set(CUgraphExec x, CUgraphNode node, const struct fake_node *n);

#endif /* FAKE_GRAPHS_H */
