/*
 * Graphs built by hand (conformance_graphs): a memset, a kernel, a
 * device-to-device copy, a child graph and an event record, with the
 * edges between them added and removed; the graph instantiated each way
 * and launched twice; its nodes' parameters got and set, in the graph and
 * in an executable graph; the generic calls; allocation and free nodes;
 * a batch of memory operations; a kernel node's attribute; the graph in
 * DOT.  Each result is printed as
 * a count, a sum or a comparison, never a handle or an address, so that a
 * local run's lines and a guest's compare.  The v1 forms are called by
 * name, whether or not <cuda.h> declares them (__CUDA_API_VERSION_INTERNAL).
 */
#define _GNU_SOURCE
#include "conformance.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { N = 4096 };

/* The sum of the N floats at d. */
static double sum_of(CUdeviceptr d)
{
    static float host[N];
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(host, d, sizeof(host)));
    double s = 0;
    for (int i = 0; i < N; i++)
        s += host[i];
    return s;
}

/* Launches exec on s and prints what a and b then hold. */
static void launch_and_sum(const char *what, CUgraphExec exec, CUstream s, CUdeviceptr a, CUdeviceptr b)
{
    SHOW("cuGraphLaunch", F(cuGraphLaunch)(exec, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    printf("%s: a sums %.0f, b sums %.0f\n", what, sum_of(a), sum_of(b));
}

/* The type of each of g's nodes, in the order cuGraphGetNodes gives them. */
static void print_nodes(CUgraph g)
{
    CUgraphNode nodes[16];
    size_t n = 16;
    SHOW("cuGraphGetNodes", F(cuGraphGetNodes)(g, nodes, &n));
    printf("nodes %zu:", n);
    for (size_t i = 0; i < n && i < 16; i++) {
        CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
        F(cuGraphNodeGetType)(nodes[i], &t);
        printf(" %d", (int)t);
    }
    printf("\n");
    size_t edges = 0, roots = 0;
    SHOW("cuGraphGetEdges_v2", F(cuGraphGetEdges_v2)(g, NULL, NULL, NULL, &edges));
    SHOW("cuGraphGetRootNodes", F(cuGraphGetRootNodes)(g, NULL, &roots));
    printf("edges %zu, roots %zu\n", edges, roots);
}

/* A kernel node's parameters got back, as the caller reads them. */
static void print_kernel_node(CUgraphNode node, CUfunction f, CUdeviceptr a)
{
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0xff, sizeof(p));
    SHOW("cuGraphKernelNodeGetParams_v2", F(cuGraphKernelNodeGetParams_v2)(node, &p));
    printf("kernel node: its function %s, grid %u x %u, block %u, shared %u, extra %s\n",
           p.func == f ? "the same" : "another", p.gridDimX, p.gridDimY, p.blockDimX, p.sharedMemBytes,
           p.extra ? "given" : "NULL");
    if (p.kernelParams)
        printf("kernel node: x %s, n %d\n", *(CUdeviceptr *)p.kernelParams[0] == a ? "a" : "not a",
               *(int *)p.kernelParams[1]);
    CUDA_KERNEL_NODE_PARAMS again;
    SHOW("cuGraphKernelNodeGetParams_v2 again", F(cuGraphKernelNodeGetParams_v2)(node, &again));
    printf("kernel node: its parameters the same array again: %s\n",
           again.kernelParams == p.kernelParams ? "yes" : "no");
    CUDA_KERNEL_NODE_PARAMS_v1 v1;
    CUresult (*get_v1)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1 *) =
        (CUresult(*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1 *))sym("cuGraphKernelNodeGetParams");
    SHOW("cuGraphKernelNodeGetParams", get_v1(node, &v1));
    printf("kernel node (v1): n %d\n", v1.kernelParams ? *(int *)v1.kernelParams[1] : -1);
}

/* Allocation and free nodes: the address comes back, and with the node's parameters. */
static void graph_memory(CUdevice dev, CUstream s)
{
    CUgraph g;
    CUgraphNode alloc, freed;
    SHOW("cuGraphCreate", F(cuGraphCreate)(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof(p));
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = dev;
    p.bytesize = 1 << 20;
    SHOW("cuGraphAddMemAllocNode", F(cuGraphAddMemAllocNode)(&alloc, g, NULL, 0, &p));
    printf("allocation node: its address %s\n", p.dptr ? "given" : "NULL");
    CUDA_MEM_ALLOC_NODE_PARAMS got;
    memset(&got, 0, sizeof(got));
    SHOW("cuGraphMemAllocNodeGetParams", F(cuGraphMemAllocNodeGetParams)(alloc, &got));
    printf("allocation node: %zu bytes, the same address %s, access descriptors %zu\n", got.bytesize,
           got.dptr == p.dptr ? "yes" : "no", got.accessDescCount);
    SHOW("cuGraphAddMemFreeNode", F(cuGraphAddMemFreeNode)(&freed, g, &alloc, 1, p.dptr));
    CUdeviceptr freeing = 0;
    SHOW("cuGraphMemFreeNodeGetParams", F(cuGraphMemFreeNodeGetParams)(freed, &freeing));
    printf("free node: the allocation's address %s\n", freeing == p.dptr ? "yes" : "no");
    CUgraphExec exec;
    SHOW("cuGraphInstantiateWithFlags", F(cuGraphInstantiateWithFlags)(&exec, g, 0));
    SHOW("cuGraphLaunch", F(cuGraphLaunch)(exec, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    SHOW("cuGraphExecDestroy", F(cuGraphExecDestroy)(exec));
    SHOW("cuGraphDestroy", F(cuGraphDestroy)(g));
}

/* A batch of memory operations: two writes, got back, set in an executable graph. */
static void batch_of_writes(CUstream s, CUdeviceptr a)
{
    CUgraph g;
    CUgraphNode node;
    SHOW("cuGraphCreate", F(cuGraphCreate)(&g, 0));
    CUstreamBatchMemOpParams ops[2];
    memset(ops, 0, sizeof(ops));
    ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[0].writeValue.address = a;
    ops[0].writeValue.value = 7;
    ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    ops[1].writeValue.address = a + 8;
    ops[1].writeValue.value64 = 0x100000009ull;
    CUcontext ctx;
    SHOW("cuCtxGetCurrent", F(cuCtxGetCurrent)(&ctx));
    CUDA_BATCH_MEM_OP_NODE_PARAMS p = { .ctx = ctx, .count = 2, .paramArray = ops, .flags = 0 };
    SHOW("cuGraphAddBatchMemOpNode", F(cuGraphAddBatchMemOpNode)(&node, g, NULL, 0, &p));
    CUDA_BATCH_MEM_OP_NODE_PARAMS back;
    memset(&back, 0, sizeof(back));
    SHOW("cuGraphBatchMemOpNodeGetParams", F(cuGraphBatchMemOpNodeGetParams)(node, &back));
    printf("batch node: %u operations, the first writes %u, the context the same: %s\n", back.count,
           back.paramArray ? back.paramArray[0].writeValue.value : 0, back.ctx == ctx ? "yes" : "no");
    CUgraphExec exec;
    SHOW("cuGraphInstantiateWithFlags", F(cuGraphInstantiateWithFlags)(&exec, g, 0));
    unsigned long long words[2] = { 0, 0 };
    SHOW("cuGraphLaunch", F(cuGraphLaunch)(exec, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(words, a, sizeof(words)));
    printf("batch written: %#llx %#llx\n", words[0] & 0xffffffffu, words[1]);
    ops[0].writeValue.value = 8;
    p.count = 1;
    SHOW("cuGraphExecBatchMemOpNodeSetParams", F(cuGraphExecBatchMemOpNodeSetParams)(exec, node, &p));
    SHOW("cuGraphLaunch", F(cuGraphLaunch)(exec, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(words, a, sizeof(words)));
    printf("batch written, its executable one set: %#llx\n", words[0] & 0xffffffffu);
    SHOW("cuGraphExecDestroy", F(cuGraphExecDestroy)(exec));
    SHOW("cuGraphDestroy", F(cuGraphDestroy)(g));
}

/* The generic calls: a kernel node and a memset node, their parameters set in the graph and in an executable one. */
static void generic_nodes(CUfunction add_one, CUcontext ctx, CUstream s, CUdeviceptr a, CUdeviceptr b)
{
    CUgraph g;
    CUgraphNode set, kern;
    SHOW("cuGraphCreate", F(cuGraphCreate)(&g, 0));
    CUgraphNodeParams p;
    memset(&p, 0, sizeof(p));
    p.type = CU_GRAPH_NODE_TYPE_MEMSET;
    p.memset = (CUDA_MEMSET_NODE_PARAMS_v2){
        .dst = a, .value = 0x40000000 /* 2.0f */, .elementSize = 4, .width = N, .height = 1, .ctx = ctx
    };
    SHOW("cuGraphAddNode_v2 memset", F(cuGraphAddNode_v2)(&set, g, NULL, NULL, 0, &p));
    int n = N;
    void *args[] = { &a, &n };
    memset(&p, 0, sizeof(p));
    p.type = CU_GRAPH_NODE_TYPE_KERNEL;
    p.kernel = (CUDA_KERNEL_NODE_PARAMS_v3){ .func = add_one,
                                             .gridDimX = N / 256,
                                             .gridDimY = 1,
                                             .gridDimZ = 1,
                                             .blockDimX = 256,
                                             .blockDimY = 1,
                                             .blockDimZ = 1,
                                             .kernelParams = args };
    CUgraphEdgeData edge;
    memset(&edge, 0, sizeof(edge));
    SHOW("cuGraphAddNode_v2 kernel", F(cuGraphAddNode_v2)(&kern, g, &set, &edge, 1, &p));
    CUgraphExec exec;
    SHOW("cuGraphInstantiateWithFlags", F(cuGraphInstantiateWithFlags)(&exec, g, 0));
    launch_and_sum("generic graph", exec, s, a, b);
    /* The executable graph's kernel on b instead. */
    p.kernel.kernelParams = (void *[]){ &b, &n };
    SHOW("cuGraphExecNodeSetParams", F(cuGraphExecNodeSetParams)(exec, kern, &p));
    launch_and_sum("generic graph, its kernel set on b", exec, s, a, b);
    /* The graph's memset, by its own (carried) call and by the generic one. */
    CUDA_MEMSET_NODE_PARAMS m = { .dst = a, .value = 0x3f800000 /* 1.0f */, .elementSize = 4, .width = N, .height = 1 };
    SHOW("cuGraphMemsetNodeSetParams", F(cuGraphMemsetNodeSetParams)(set, &m));
    CUDA_MEMSET_NODE_PARAMS back;
    memset(&back, 0, sizeof(back));
    SHOW("cuGraphMemsetNodeGetParams", F(cuGraphMemsetNodeGetParams)(set, &back));
    printf("memset node: value %#x, element %u, width %zu\n", back.value, back.elementSize, back.width);
    CUgraphExec again;
    SHOW("cuGraphInstantiateWithFlags", F(cuGraphInstantiateWithFlags)(&again, g, 0));
    launch_and_sum("generic graph, its memset set to 1", again, s, a, b);
    m.value = 0;
    SHOW("cuGraphExecMemsetNodeSetParams", F(cuGraphExecMemsetNodeSetParams)(again, set, &m, ctx));
    launch_and_sum("generic graph, its executable memset set to 0", again, s, a, b);
    SHOW("cuGraphExecDestroy", F(cuGraphExecDestroy)(again));
    SHOW("cuGraphExecDestroy", F(cuGraphExecDestroy)(exec));
    SHOW("cuGraphDestroy", F(cuGraphDestroy)(g));
}

void conformance_graphs(void)
{
    CUfunction add_one = conformance_kernel("add_one");
    CUcontext ctx;
    CUdevice dev;
    SHOW("cuCtxGetCurrent", F(cuCtxGetCurrent)(&ctx));
    SHOW("cuCtxGetDevice", F(cuCtxGetDevice)(&dev));
    CUdeviceptr a, b;
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&a, N * sizeof(float)));
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&b, N * sizeof(float)));
    CUstream s;
    CUevent e;
    SHOW("cuStreamCreate", F(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING));
    SHOW("cuEventCreate", F(cuEventCreate)(&e, CU_EVENT_DISABLE_TIMING));

    /* a = 0; a += 1 (a kernel); b = a (a copy); b += 1 (a child graph's kernel); an event recorded. */
    CUgraph g, child;
    CUgraphNode set, kern, copy, sub, record, empty, inner;
    SHOW("cuGraphCreate", F(cuGraphCreate)(&g, 0));
    CUDA_MEMSET_NODE_PARAMS ms = { .dst = a, .value = 0, .elementSize = 4, .width = N, .height = 1 };
    SHOW("cuGraphAddMemsetNode", F(cuGraphAddMemsetNode)(&set, g, NULL, 0, &ms, ctx));
    int n = N;
    void *args_a[] = { &a, &n };
    CUDA_KERNEL_NODE_PARAMS kp = { .func = add_one,
                                   .gridDimX = N / 256,
                                   .gridDimY = 1,
                                   .gridDimZ = 1,
                                   .blockDimX = 256,
                                   .blockDimY = 1,
                                   .blockDimZ = 1,
                                   .kernelParams = args_a };
    SHOW("cuGraphAddKernelNode_v2", F(cuGraphAddKernelNode_v2)(&kern, g, &set, 1, &kp));
    CUDA_MEMCPY3D cp;
    memset(&cp, 0, sizeof(cp));
    cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.srcDevice = a;
    cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.dstDevice = b;
    cp.srcPitch = cp.dstPitch = cp.WidthInBytes = N * sizeof(float);
    cp.srcHeight = cp.dstHeight = cp.Height = 1;
    cp.Depth = 1;
    SHOW("cuGraphAddMemcpyNode", F(cuGraphAddMemcpyNode)(&copy, g, &kern, 1, &cp, ctx));
    SHOW("cuGraphCreate child", F(cuGraphCreate)(&child, 0));
    /* The child's kernel by the v1 call, its parameters in one buffer (extra). */
    struct {
        CUdeviceptr x;
        int n;
    } buffer = { b, N };
    size_t buffer_size = sizeof(buffer);
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &buffer_size,
                      CU_LAUNCH_PARAM_END };
    CUDA_KERNEL_NODE_PARAMS_v1 k1 = { .func = add_one,
                                      .gridDimX = N / 256,
                                      .gridDimY = 1,
                                      .gridDimZ = 1,
                                      .blockDimX = 256,
                                      .blockDimY = 1,
                                      .blockDimZ = 1,
                                      .extra = extra };
    CUresult (*add_v1)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS_v1 *) =
        (CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS_v1 *))sym(
            "cuGraphAddKernelNode");
    SHOW("cuGraphAddKernelNode", add_v1(&inner, child, NULL, 0, &k1));
    SHOW("cuGraphAddChildGraphNode", F(cuGraphAddChildGraphNode)(&sub, g, NULL, 0, child));
    CUresult (*depend_v1)(CUgraph, const CUgraphNode *, const CUgraphNode *, size_t) =
        (CUresult(*)(CUgraph, const CUgraphNode *, const CUgraphNode *, size_t))sym("cuGraphAddDependencies");
    SHOW("cuGraphAddDependencies", depend_v1(g, &copy, &sub, 1));
    SHOW("cuGraphAddEventRecordNode", F(cuGraphAddEventRecordNode)(&record, g, &sub, 1, e));
    SHOW("cuGraphAddEmptyNode", F(cuGraphAddEmptyNode)(&empty, g, NULL, 0));
    SHOW("cuGraphAddDependencies_v2", F(cuGraphAddDependencies_v2)(g, &empty, &set, NULL, 1));
    print_nodes(g);
    size_t deps = 4;
    CUgraphNode before[4];
    SHOW("cuGraphNodeGetDependencies_v2", F(cuGraphNodeGetDependencies_v2)(set, before, NULL, &deps));
    printf("the memset depends on %zu node(s), the empty one: %s\n", deps,
           deps == 1 && before[0] == empty ? "yes" : "no");
    SHOW("cuGraphRemoveDependencies_v2", F(cuGraphRemoveDependencies_v2)(g, &empty, &set, NULL, 1));
    print_nodes(g);
    CUgraph inside;
    CUevent recorded;
    SHOW("cuGraphChildGraphNodeGetGraph", F(cuGraphChildGraphNodeGetGraph)(sub, &inside));
    SHOW("cuGraphEventRecordNodeGetEvent", F(cuGraphEventRecordNodeGetEvent)(record, &recorded));
    printf("the event record node's event the same: %s\n", recorded == e ? "yes" : "no");
    print_nodes(inside);

    /* Its parameters back. */
    print_kernel_node(kern, add_one, a);
    CUDA_MEMCPY3D back;
    memset(&back, 0, sizeof(back));
    SHOW("cuGraphMemcpyNodeGetParams", F(cuGraphMemcpyNodeGetParams)(copy, &back));
    printf("copy node: %zu bytes, from %s to %s\n", back.WidthInBytes, back.srcDevice == a ? "a" : "?",
           back.dstDevice == b ? "b" : "?");
    CUkernelNodeAttrValue v;
    memset(&v, 0, sizeof(v));
    v.priority = 1;
    SHOW("cuGraphKernelNodeSetAttribute", F(cuGraphKernelNodeSetAttribute)(kern, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
    memset(&v, 0, sizeof(v));
    SHOW("cuGraphKernelNodeGetAttribute", F(cuGraphKernelNodeGetAttribute)(kern, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
    printf("kernel node's priority %d\n", v.priority);

    /* Instantiated each way, launched twice: a = 1, b = 2 each time (the memset first). */
    CUgraphExec with_flags, v1, v2, with_params;
    SHOW("cuGraphInstantiateWithFlags", F(cuGraphInstantiateWithFlags)(&with_flags, g, 0));
    CUresult (*instantiate)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
    char log[64] = "unwritten";
    CUgraphNode error_node = kern;
    instantiate = (CUresult(*)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t))sym("cuGraphInstantiate");
    SHOW("cuGraphInstantiate", instantiate(&v1, g, &error_node, log, sizeof(log)));
    instantiate = (CUresult(*)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t))sym("cuGraphInstantiate_v2");
    SHOW("cuGraphInstantiate_v2", instantiate(&v2, g, NULL, NULL, 0));
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = { .flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                         .hUploadStream = s,
                                         .hErrNode_out = kern,
                                         .result_out = CUDA_GRAPH_INSTANTIATE_ERROR };
    SHOW("cuGraphInstantiateWithParams", F(cuGraphInstantiateWithParams)(&with_params, g, &ip));
    printf("instantiated with its parameters: result %d, error node %s\n", (int)ip.result_out,
           ip.hErrNode_out ? "given" : "NULL");
    SHOW("cuGraphUpload", F(cuGraphUpload)(v2, s));
    launch_and_sum("instantiated with flags, first launch", with_flags, s, a, b);
    launch_and_sum("instantiated with flags, second launch", with_flags, s, a, b);
    launch_and_sum("cuGraphInstantiate", v1, s, a, b);
    launch_and_sum("cuGraphInstantiate_v2", v2, s, a, b);
    launch_and_sum("cuGraphInstantiateWithParams", with_params, s, a, b);
    SHOW("cuEventQuery", F(cuEventQuery)(e));

    /* The executable graph's kernel on b: a stays 0; b = 0 (the copy of a) + 1. */
    void *args_b[] = { &b, &n };
    CUDA_KERNEL_NODE_PARAMS kb = kp;
    kb.kernelParams = args_b;
    SHOW("cuGraphExecKernelNodeSetParams_v2", F(cuGraphExecKernelNodeSetParams_v2)(with_flags, kern, &kb));
    launch_and_sum("its executable kernel set on b", with_flags, s, a, b);
    launch_and_sum("another executable graph, unchanged", v2, s, a, b);
    /* The graph's kernel over half of a; an executable graph updated from it. */
    int half = N / 2;
    void *args_half[] = { &a, &half };
    kb.kernelParams = args_half;
    SHOW("cuGraphKernelNodeSetParams_v2", F(cuGraphKernelNodeSetParams_v2)(kern, &kb));
    print_kernel_node(kern, add_one, a);
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0xff, sizeof(info));
    SHOW("cuGraphExecUpdate_v2", F(cuGraphExecUpdate_v2)(with_flags, g, &info));
    printf("update: result %d, error node %s\n", (int)info.result, info.errorNode ? "given" : "NULL");
    launch_and_sum("updated from the graph, its kernel over half of a", with_flags, s, a, b);

    /* The graph in DOT. */
    char path[64];
    snprintf(path, sizeof(path), "/tmp/conformance-graph-%d.dot", (int)getpid());
    SHOW("cuGraphDebugDotPrint", F(cuGraphDebugDotPrint)(g, path, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE));
    struct stat st;
    printf("DOT file written: %s\n", stat(path, &st) == 0 && st.st_size > 0 ? "yes, not empty" : "no");
    unlink(path);

    /* A node removed. */
    SHOW("cuGraphDestroyNode", F(cuGraphDestroyNode)(empty));
    print_nodes(g);

    generic_nodes(add_one, ctx, s, a, b);
    graph_memory(dev, s);
    batch_of_writes(s, a);

    CUgraphExec execs[] = { with_flags, v1, v2, with_params };
    for (int i = 0; i < 4; i++)
        SHOW("cuGraphExecDestroy", F(cuGraphExecDestroy)(execs[i]));
    SHOW("cuGraphDestroy", F(cuGraphDestroy)(child));
    SHOW("cuGraphDestroy", F(cuGraphDestroy)(g));
    SHOW("cuEventDestroy_v2", F(cuEventDestroy_v2)(e));
    SHOW("cuStreamDestroy_v2", F(cuStreamDestroy_v2)(s));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(a));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(b));
}
