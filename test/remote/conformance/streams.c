/*
 * Streams: their attributes (set, read back, their per-thread forms),
 * batches of memory operations (32- and 64-bit writes, waits for the
 * values written, a barrier), and a capture into a graph of the program's
 * (cuStreamBeginCaptureToGraph) whose dependencies it reads and sets
 * (cuStreamGetCaptureInfo_v3, cuStreamUpdateCaptureDependencies_v2), then
 * instantiated and launched.
 */
#include "conformance.h"

#include <string.h>

static void attributes(CUstream s)
{
    CUstreamAttrValue v;
    memset(&v, 0, sizeof(v));
    SHOW("cuStreamGetAttribute sync policy",
         F(cuStreamGetAttribute)(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
    printf("sync policy at first %d\n", (int)v.syncPolicy);
    memset(&v, 0, sizeof(v));
    v.syncPolicy = CU_SYNC_POLICY_BLOCKING_SYNC;
    SHOW("cuStreamSetAttribute sync policy",
         F(cuStreamSetAttribute)(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
    memset(&v, 0, sizeof(v));
    SHOW("cuStreamGetAttribute sync policy",
         F(cuStreamGetAttribute)(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
    printf("sync policy set %d\n", (int)v.syncPolicy);
    memset(&v, 0, sizeof(v));
    v.priority = -3;
    SHOW("cuStreamSetAttribute priority", F(cuStreamSetAttribute)(s, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
    memset(&v, 0, sizeof(v));
    SHOW("cuStreamGetAttribute priority", F(cuStreamGetAttribute)(s, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
    printf("priority set %d\n", v.priority);
    memset(&v, 0, sizeof(v));
    v.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
    SHOW("cuStreamSetAttribute memory sync domain",
         F(cuStreamSetAttribute)(s, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, &v));
    memset(&v, 0, sizeof(v));
    SHOW("cuStreamGetAttribute memory sync domain",
         F(cuStreamGetAttribute)(s, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, &v));
    printf("memory sync domain set %d\n", (int)v.memSyncDomain);
    memset(&v, 0, sizeof(v));
    v.syncPolicy = (CUsynchronizationPolicy)9;
    TRY("cuStreamSetAttribute of no such policy",
        F(cuStreamSetAttribute)(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
    TRY("cuStreamGetAttribute of a launch's attribute",
        F(cuStreamGetAttribute)(s, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v));
    /* The calling thread's own default stream. */
    memset(&v, 0, sizeof(v));
    v.syncPolicy = CU_SYNC_POLICY_SPIN;
    SHOW("cuStreamSetAttribute_ptsz sync policy",
         F(cuStreamSetAttribute_ptsz)(NULL, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
    memset(&v, 0, sizeof(v));
    SHOW("cuStreamGetAttribute_ptsz sync policy",
         F(cuStreamGetAttribute_ptsz)(NULL, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
    printf("per-thread stream's sync policy %d\n", (int)v.syncPolicy);
}

static CUstreamBatchMemOpParams write32(CUdeviceptr at, cuuint32_t value, unsigned flags)
{
    CUstreamBatchMemOpParams op;
    memset(&op, 0, sizeof(op));
    op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    op.writeValue.address = at;
    op.writeValue.value = value;
    op.writeValue.flags = flags;
    return op;
}

static CUstreamBatchMemOpParams write64(CUdeviceptr at, cuuint64_t value)
{
    CUstreamBatchMemOpParams op;
    memset(&op, 0, sizeof(op));
    op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    op.writeValue.address = at;
    op.writeValue.value64 = value;
    return op;
}

static CUstreamBatchMemOpParams wait_for(CUstreamBatchMemOpType type, CUdeviceptr at, cuuint64_t value, unsigned flags)
{
    CUstreamBatchMemOpParams op;
    memset(&op, 0, sizeof(op));
    op.waitValue.operation = type;
    op.waitValue.address = at;
    if (type == CU_STREAM_MEM_OP_WAIT_VALUE_64)
        op.waitValue.value64 = value;
    else
        op.waitValue.value = (cuuint32_t)value;
    op.waitValue.flags = flags;
    return op;
}

static void memory_operations(CUstream s)
{
    CUdeviceptr d = 0;
    unsigned words[6];
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d, sizeof(words)));
    SHOW("cuMemsetD32_v2", F(cuMemsetD32_v2)(d, 0, 6));
    CUstreamBatchMemOpParams ops[6];
    memset(ops, 0, sizeof(ops));
    ops[0] = write32(d, 0xabcd1234u, 0);
    ops[1] = write64(d + 8, 0x1122334455667788ull);
    ops[2] = wait_for(CU_STREAM_MEM_OP_WAIT_VALUE_32, d, 0xabcd1234u, CU_STREAM_WAIT_VALUE_EQ);
    ops[3].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
    ops[4] = wait_for(CU_STREAM_MEM_OP_WAIT_VALUE_64, d + 8, 0x1122334455667700ull, CU_STREAM_WAIT_VALUE_GEQ);
    ops[5] = write32(d + 16, 7, 0);
    SHOW("cuStreamBatchMemOp_v2", F(cuStreamBatchMemOp_v2)(s, 6, ops, 0));
    CUstreamBatchMemOpParams more[2] = {
        wait_for(CU_STREAM_MEM_OP_WAIT_VALUE_32, d + 16, 3, CU_STREAM_WAIT_VALUE_AND),
        write32(d + 20, 0x55aa55aau, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER),
    };
    SHOW("cuStreamBatchMemOp, a write without a barrier", F(cuStreamBatchMemOp)(s, 2, more, 0));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    memset(words, 0, sizeof(words));
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(words, d, sizeof(words)));
    printf("words after the batches: %08x %08x %08x %08x %08x %08x\n", words[0], words[1], words[2], words[3], words[4],
           words[5]);
    CUstreamBatchMemOpParams bad = write32(d + 2, 1, 0);
    TRY("cuStreamBatchMemOp_v2 of an unaligned word", F(cuStreamBatchMemOp_v2)(s, 1, &bad, 0));
    bad = write32(d + 20, 1, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER);
    TRY("cuStreamBatchMemOp_v2 of a write without a barrier", F(cuStreamBatchMemOp_v2)(s, 1, &bad, 0));
    bad = write32(d, 1, 0);
    TRY("cuStreamBatchMemOp_v2 with flags", F(cuStreamBatchMemOp_v2)(s, 1, &bad, 1));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(d));
}

/* The capture's status, whether its graph is g, and its dependencies
 * (copied into deps, at most 4). */
static size_t capture_info(CUstream s, CUgraph g, CUgraphNode *deps)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUgraph graph = NULL;
    const CUgraphNode *nodes = NULL;
    const CUgraphEdgeData *edges = NULL;
    size_t n = 0;
    SHOW("cuStreamGetCaptureInfo_v3", F(cuStreamGetCaptureInfo_v3)(s, &status, &id, &graph, &nodes, &edges, &n));
    printf("capture status %d, an id %s, into the program's graph %s, %zu dependencies\n", (int)status,
           id ? "yes" : "no", graph == g ? "yes" : "no", n);
    for (size_t i = 0; i < n && i < 4; i++) {
        CUgraphNodeType type = (CUgraphNodeType)-1;
        SHOW("cuGraphNodeGetType", F(cuGraphNodeGetType)(nodes[i], &type));
        printf("dependency %zu: type %d, edge type %d ports %d %d\n", i, (int)type, edges ? edges[i].type : -1,
               edges ? edges[i].from_port : -1, edges ? edges[i].to_port : -1);
        deps[i] = nodes[i];
    }
    return n;
}

static void capture_to_graph(CUstream s)
{
    enum { N = 16 };
    CUfunction add_one = conformance_kernel("add_one");
    CUdeviceptr d = 0;
    float x[N];
    int n = N;
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d, sizeof(x)));
    SHOW("cuMemcpyHtoD_v2", F(cuMemcpyHtoD_v2)(d, x, sizeof(x)));
    void *params[] = { &d, &n };
    CUgraph g = NULL, ended = NULL;
    CUgraphExec exec = NULL;
    CUgraphNode deps[4] = { NULL };
    SHOW("cuGraphCreate", F(cuGraphCreate)(&g, 0));
    capture_info(s, g, deps);
    TRY("cuStreamUpdateCaptureDependencies_v2 with no capture",
        F(cuStreamUpdateCaptureDependencies_v2)(s, NULL, NULL, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    SHOW("cuStreamBeginCaptureToGraph",
         F(cuStreamBeginCaptureToGraph)(s, g, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    capture_info(s, g, deps);
    SHOW("cuLaunchKernel captured", F(cuLaunchKernel)(add_one, 1, 1, 1, N, 1, 1, 0, s, params, NULL));
    size_t k = capture_info(s, g, deps);
    SHOW("cuStreamUpdateCaptureDependencies_v2 set",
         F(cuStreamUpdateCaptureDependencies_v2)(s, deps, NULL, k, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    SHOW("cuStreamUpdateCaptureDependencies_v2 add",
         F(cuStreamUpdateCaptureDependencies_v2)(s, deps, NULL, k, CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
    capture_info(s, g, deps);
    SHOW("cuLaunchKernel captured again", F(cuLaunchKernel)(add_one, 1, 1, 1, N, 1, 1, 0, s, params, NULL));
    capture_info(s, g, deps);
    SHOW("cuStreamEndCapture", F(cuStreamEndCapture)(s, &ended));
    printf("the capture ended in the program's graph: %s\n", ended == g ? "yes" : "no");
    SHOW("cuGraphInstantiateWithFlags", F(cuGraphInstantiateWithFlags)(&exec, g, 0));
    SHOW("cuGraphLaunch", F(cuGraphLaunch)(exec, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    memset(x, 0, sizeof(x));
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(x, d, sizeof(x)));
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += x[i] != (float)i + 2.0f;
    printf("elements wrong after the captured graph %d (first %g, last %g)\n", wrong, x[0], x[N - 1]);
    SHOW("cuGraphExecDestroy", F(cuGraphExecDestroy)(exec));
    SHOW("cuGraphDestroy", F(cuGraphDestroy)(g));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(d));
}

void conformance_streams(void)
{
    CUstream s = NULL;
    SHOW("cuStreamCreate", F(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING));
    attributes(s);
    memory_operations(s);
    capture_to_graph(s);
    SHOW("cuStreamDestroy_v2", F(cuStreamDestroy_v2)(s));
}
