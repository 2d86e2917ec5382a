/*
 * runtime_client LIBCUDART: the CUDA runtime (the toolkit's libcudart, as
 * PyTorch, JAX and CuPy load it) on a remote GPU: its start through the
 * driver's private tables, devices, memory, copies of every kind, a kernel
 * registered as nvcc registers one (on the fake GPU's image), streams,
 * events, a host function and a graph captured from a stream.  Every
 * result is checked here; the first wrong one exits 1, naming it.
 *
 * The runtime's declarations are written out below: vgpu builds without a
 * toolkit, and the test needs only the library.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cudaError_t;
typedef void *cudaStream_t, *cudaEvent_t, *cudaGraph_t, *cudaGraphExec_t;
typedef struct {
    unsigned x, y, z;
} dim3;
enum { H2H = 0, H2D = 1, D2H = 2, D2D = 3, DEFAULT = 4 };
struct pointer_attributes { /* cudaPointerAttributes */
    int type;               /* 1 host, 2 device */
    int device;
    void *device_pointer, *host_pointer;
    long reserved[8]; /* the runtime writes these too */
};

static void *rt;
static const char *current_case; /* the case that runs, named in a failure */

static void *sym(const char *name)
{
    void *p = dlsym(rt, name);
    if (!p) {
        printf("FAIL: the runtime has no %s\n", name);
        exit(1);
    }
    return p;
}
#define RT(ret, name, ...) ((ret(*)(__VA_ARGS__))sym(#name))

static void check(const char *what, cudaError_t r)
{
    if (r != 0) {
        const char *(*text)(cudaError_t) = (const char *(*)(cudaError_t))sym("cudaGetErrorString");
        printf("FAIL: %s: %s: %d (%s)\n", current_case, what, r, text(r));
        exit(1);
    }
    printf("%s: ok\n", what);
}

static void expect(const char *what, int ok)
{
    if (!ok) {
        printf("FAIL: %s: %s\n", current_case, what);
        exit(1);
    }
    printf("%s: ok\n", what);
}

/* The fake GPU's kernels, registered as nvcc's host code registers a
 * translation unit's: a wrapper around the image, then each kernel by the
 * address of its host-side stub. */
static void add_one_stub(void)
{
}
static void fill_u32_stub(void)
{
}
static const char fake_image[] = "fakegpu module of runtime_client";
static struct {
    unsigned magic, version;
    const void *data, *prelinked;
} wrapper = { 0x466243b1, 1, fake_image, NULL };

static void register_kernels(void)
{
    void **(*reg)(void *) = (void **(*)(void *))sym("__cudaRegisterFatBinary");
    void (*end)(void **) = (void (*)(void **))sym("__cudaRegisterFatBinaryEnd");
    void (*fn)(void **, const char *, char *, const char *, int, void *, void *, void *, void *, int *) =
        (void (*)(void **, const char *, char *, const char *, int, void *, void *, void *, void *, int *))sym(
            "__cudaRegisterFunction");
    void **handle = reg(&wrapper);
    fn(handle, (const char *)add_one_stub, (char *)"add_one", "add_one", -1, NULL, NULL, NULL, NULL, NULL);
    fn(handle, (const char *)fill_u32_stub, (char *)"fill_u32", "fill_u32", -1, NULL, NULL, NULL, NULL, NULL);
    end(handle);
}

static int host_function_ran;
static void host_function(void *data)
{
    host_function_ran = *(int *)data;
}

/* What the cases share: the first's device memory and host buffers, the
 * kernel's launch, the stream, its events, its page-locked buffer and the
 * graph captured on it, each made by the case that first needs it. */
enum { N = 1 << 16 };
static struct {
    int runtime, driver;
    float *host, *back, *pinned;
    void *d, *d2;
    int n;
    void *args[2];
    dim3 grid, block;
    cudaStream_t s;
    cudaEvent_t e0, e1;
    cudaGraph_t g;
    cudaGraphExec_t ge;
} t;

static cudaError_t copy(void *to, const void *from, size_t n, int kind)
{
    return RT(cudaError_t, cudaMemcpy, void *, const void *, size_t, int)(to, from, n, kind);
}

static cudaError_t copy_async(void *to, const void *from, size_t n, int kind, cudaStream_t s)
{
    return RT(cudaError_t, cudaMemcpyAsync, void *, const void *, size_t, int, cudaStream_t)(to, from, n, kind, s);
}

/* add_one over the device memory, launched by the runtime's call how. */
static cudaError_t launch(const char *how, cudaStream_t s)
{
    cudaError_t (*fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t) =
        (cudaError_t(*)(const void *, dim3, dim3, void **, size_t, cudaStream_t))sym(how);
    return fn((const void *)add_one_stub, t.grid, t.block, t.args, 0, s);
}

static void versions_and_devices(void)
{
    int count = 0, major = 0;
    check("cudaRuntimeGetVersion", RT(cudaError_t, cudaRuntimeGetVersion, int *)(&t.runtime));
    check("cudaDriverGetVersion", RT(cudaError_t, cudaDriverGetVersion, int *)(&t.driver));
    check("cudaGetDeviceCount", RT(cudaError_t, cudaGetDeviceCount, int *)(&count));
    expect("devices seen", count >= 1);
    check("cudaSetDevice", RT(cudaError_t, cudaSetDevice, int)(0));
    check("cudaDeviceGetAttribute", RT(cudaError_t, cudaDeviceGetAttribute, int *, int, int)(&major, 75, 0));
    expect("compute capability 9", major == 9);
    size_t free_bytes = 0, total = 0;
    check("cudaMemGetInfo", RT(cudaError_t, cudaMemGetInfo, size_t *, size_t *)(&free_bytes, &total));
    expect("free memory no more than the total", total > 0 && free_bytes <= total);
}

/* The kernel, by its stub, as <<<>>> launches it. */
static void kernel_by_its_stub(void)
{
    t.host = malloc(N * sizeof(float));
    t.back = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++)
        t.host[i] = (float)i;
    check("cudaMalloc", RT(cudaError_t, cudaMalloc, void **, size_t)(&t.d, N * sizeof(float)));
    check("cudaMalloc", RT(cudaError_t, cudaMalloc, void **, size_t)(&t.d2, N * sizeof(float)));
    check("cudaMemcpy host to device", copy(t.d, t.host, N * sizeof(float), H2D));
    t.n = N;
    t.args[0] = &t.d;
    t.args[1] = &t.n;
    t.grid = (dim3){ N / 256, 1, 1 };
    t.block = (dim3){ 256, 1, 1 };
    check("cudaLaunchKernel", launch("cudaLaunchKernel", NULL));
    check("cudaDeviceSynchronize", RT(cudaError_t, cudaDeviceSynchronize, void)());
    check("cudaMemcpy device to device", copy(t.d2, t.d, N * sizeof(float), D2D));
    check("cudaMemcpy device to host", copy(t.back, t.d2, N * sizeof(float), D2H));
    expect("the kernel added one", t.back[0] == 1.0f && t.back[N - 1] == (float)N);
}

/* Unified copies: the runtime tells host from device itself. */
static void default_copies(void)
{
    memset(t.back, 0, N * sizeof(float));
    check("cudaMemcpy default, to the device", copy(t.d2, t.host, N * sizeof(float), DEFAULT));
    check("cudaMemcpy default, to the host", copy(t.back, t.d2, N * sizeof(float), DEFAULT));
    expect("a default round trip", memcmp(t.back, t.host, N * sizeof(float)) == 0);
}

static void stream_and_events(void)
{
    check("cudaStreamCreate", RT(cudaError_t, cudaStreamCreate, cudaStream_t *)(&t.s));
    check("cudaEventCreate", RT(cudaError_t, cudaEventCreate, cudaEvent_t *)(&t.e0));
    check("cudaEventCreate", RT(cudaError_t, cudaEventCreate, cudaEvent_t *)(&t.e1));
}

/* What the runtime knows of a pointer: the device's, and the guest's page-locked memory. */
static void pointer_attributes(void)
{
    check("cudaMallocHost", RT(cudaError_t, cudaMallocHost, void **, size_t)((void **)&t.pinned, N * sizeof(float)));
    struct pointer_attributes pa = { .type = -1, .device = -1 };
    cudaError_t (*attributes)(struct pointer_attributes *, const void *) =
        RT(cudaError_t, cudaPointerGetAttributes, struct pointer_attributes *, const void *);
    check("cudaPointerGetAttributes of device memory", attributes(&pa, t.d));
    expect("device memory, device 0", pa.type == 2 && pa.device == 0 && pa.device_pointer == t.d);
    check("cudaPointerGetAttributes of page-locked memory", attributes(&pa, t.pinned + 5));
    expect("host memory", pa.type == 1 && pa.host_pointer == t.pinned + 5);
}

/* On the stream: asynchronous copies, a memset, events, a host function. */
static void stream_work_in_order(void)
{
    check("cudaEventRecord", RT(cudaError_t, cudaEventRecord, cudaEvent_t, cudaStream_t)(t.e0, t.s));
    check("cudaMemcpyAsync host to device", copy_async(t.d, t.host, N * sizeof(float), H2D, t.s));
    check("cudaMemsetAsync", RT(cudaError_t, cudaMemsetAsync, void *, int, size_t, cudaStream_t)(t.d, 0, 64, t.s));
    check("cudaLaunchKernel on the stream", launch("cudaLaunchKernel", t.s));
    check("cudaMemcpyAsync device to host", copy_async(t.pinned, t.d, N * sizeof(float), D2H, t.s));
    int token = 42;
    check("cudaLaunchHostFunc",
          RT(cudaError_t, cudaLaunchHostFunc, cudaStream_t, void (*)(void *), void *)(t.s, host_function, &token));
    check("cudaEventRecord", RT(cudaError_t, cudaEventRecord, cudaEvent_t, cudaStream_t)(t.e1, t.s));
    check("cudaStreamSynchronize", RT(cudaError_t, cudaStreamSynchronize, cudaStream_t)(t.s));
    expect("the stream's copies, memset and kernel, in order",
           t.pinned[0] == 1.0f && t.pinned[15] == 1.0f && t.pinned[16] == 17.0f && t.pinned[N - 1] == (float)N);
    expect("the host function ran, before the synchronize returned", host_function_ran == 42);
    float ms = -1;
    check("cudaEventElapsedTime",
          RT(cudaError_t, cudaEventElapsedTime, float *, cudaEvent_t, cudaEvent_t)(&ms, t.e0, t.e1));
    expect("elapsed time", ms >= 0);
}

/* A graph captured from the stream, launched twice. */
static void captured_graph(void)
{
    check("cudaStreamBeginCapture", RT(cudaError_t, cudaStreamBeginCapture, cudaStream_t, int)(t.s, 0));
    check("cudaLaunchKernel, captured", launch("cudaLaunchKernel", t.s));
    int status = 0;
    unsigned long long capture_id = 0;
    const void *const *deps = NULL;
    size_t ndeps = 0;
    check("cudaStreamGetCaptureInfo",
          RT(cudaError_t, cudaStreamGetCaptureInfo, cudaStream_t, int *, unsigned long long *, cudaGraph_t *,
             const void *const **, const void **, size_t *)(t.s, &status, &capture_id, &t.g, &deps, NULL, &ndeps));
    /* The nodes to depend on: as many as the driver says (the fake GPU's captures keep none). */
    expect("capturing, into a graph", status == 1 && capture_id != 0 && t.g && (ndeps == 0 || (deps && deps[0])));
    check("cudaStreamEndCapture", RT(cudaError_t, cudaStreamEndCapture, cudaStream_t, cudaGraph_t *)(t.s, &t.g));
    check("cudaGraphInstantiate",
          RT(cudaError_t, cudaGraphInstantiate, cudaGraphExec_t *, cudaGraph_t, unsigned long long)(&t.ge, t.g, 0));
    check("cudaGraphLaunch", RT(cudaError_t, cudaGraphLaunch, cudaGraphExec_t, cudaStream_t)(t.ge, t.s));
    check("cudaGraphLaunch", RT(cudaError_t, cudaGraphLaunch, cudaGraphExec_t, cudaStream_t)(t.ge, t.s));
    check("cudaStreamSynchronize", RT(cudaError_t, cudaStreamSynchronize, cudaStream_t)(t.s));
    check("cudaMemcpy device to host", copy(t.back, t.d, N * sizeof(float), D2H));
    expect("the graph ran twice", t.back[0] == 3.0f && t.back[N - 1] == (float)N + 2);
}

static void cooperative_launch(void)
{
    check("cudaLaunchCooperativeKernel", launch("cudaLaunchCooperativeKernel", t.s));
    check("cudaStreamSynchronize", RT(cudaError_t, cudaStreamSynchronize, cudaStream_t)(t.s));
    check("cudaMemcpy device to host", copy(t.back, t.d, N * sizeof(float), D2H));
    expect("the cooperative kernel ran", t.back[0] == 4.0f && t.back[N - 1] == (float)N + 3);
}

static void everything_freed(void)
{
    check("cudaGraphExecDestroy", RT(cudaError_t, cudaGraphExecDestroy, cudaGraphExec_t)(t.ge));
    check("cudaGraphDestroy", RT(cudaError_t, cudaGraphDestroy, cudaGraph_t)(t.g));
    check("cudaFreeHost", RT(cudaError_t, cudaFreeHost, void *)(t.pinned));
    check("cudaStreamDestroy", RT(cudaError_t, cudaStreamDestroy, cudaStream_t)(t.s));
    check("cudaFree", RT(cudaError_t, cudaFree, void *)(t.d));
    check("cudaFree", RT(cudaError_t, cudaFree, void *)(t.d2));
    free(t.host);
    free(t.back);
}

/* In order: each case goes on from what the ones before it made. */
static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    { "versions and devices", versions_and_devices },
    { "a kernel by its stub", kernel_by_its_stub },
    { "default copies", default_copies },
    { "a stream and its events", stream_and_events },
    { "pointer attributes", pointer_attributes },
    { "a stream's work, in order", stream_work_in_order },
    { "a captured graph", captured_graph },
    { "a cooperative launch", cooperative_launch },
    { "everything freed", everything_freed },
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: runtime_client LIBCUDART\n");
        return 2;
    }
    rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!rt) {
        printf("FAIL: %s\n", dlerror());
        return 1;
    }
    register_kernels();
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        current_case = cases[i].name;
        cases[i].run();
    }
    printf("runtime %d on driver %d: all ok\n", t.runtime, t.driver);
    return 0;
}
