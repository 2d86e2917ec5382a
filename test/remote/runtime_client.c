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
        printf("FAIL: %s: %d (%s)\n", what, r, text(r));
        exit(1);
    }
    printf("%s: ok\n", what);
}

static void expect(const char *what, int ok)
{
    if (!ok) {
        printf("FAIL: %s\n", what);
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

    int count = 0, major = 0, runtime = 0, driver = 0;
    check("cudaRuntimeGetVersion", RT(cudaError_t, cudaRuntimeGetVersion, int *)(&runtime));
    check("cudaDriverGetVersion", RT(cudaError_t, cudaDriverGetVersion, int *)(&driver));
    check("cudaGetDeviceCount", RT(cudaError_t, cudaGetDeviceCount, int *)(&count));
    expect("devices seen", count >= 1);
    check("cudaSetDevice", RT(cudaError_t, cudaSetDevice, int)(0));
    check("cudaDeviceGetAttribute", RT(cudaError_t, cudaDeviceGetAttribute, int *, int, int)(&major, 75, 0));
    expect("compute capability 9", major == 9);
    size_t free_bytes = 0, total = 0;
    check("cudaMemGetInfo", RT(cudaError_t, cudaMemGetInfo, size_t *, size_t *)(&free_bytes, &total));
    expect("free memory no more than the total", total > 0 && free_bytes <= total);

    enum { N = 1 << 16 };
    float *host = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++)
        host[i] = (float)i;
    void *d = NULL, *d2 = NULL;
    check("cudaMalloc", RT(cudaError_t, cudaMalloc, void **, size_t)(&d, N * sizeof(float)));
    check("cudaMalloc", RT(cudaError_t, cudaMalloc, void **, size_t)(&d2, N * sizeof(float)));
    cudaError_t (*copy)(void *, const void *, size_t, int) =
        RT(cudaError_t, cudaMemcpy, void *, const void *, size_t, int);
    check("cudaMemcpy host to device", copy(d, host, N * sizeof(float), H2D));

    /* The kernel, by its stub, as <<<>>> launches it. */
    int n = N;
    void *args[] = { &d, &n };
    dim3 grid = { N / 256, 1, 1 }, block = { 256, 1, 1 };
    check("cudaLaunchKernel", RT(cudaError_t, cudaLaunchKernel, const void *, dim3, dim3, void **, size_t,
                                 cudaStream_t)((const void *)add_one_stub, grid, block, args, 0, NULL));
    check("cudaDeviceSynchronize", RT(cudaError_t, cudaDeviceSynchronize, void)());
    check("cudaMemcpy device to device", copy(d2, d, N * sizeof(float), D2D));
    check("cudaMemcpy device to host", copy(back, d2, N * sizeof(float), D2H));
    expect("the kernel added one", back[0] == 1.0f && back[N - 1] == (float)N);

    /* Unified copies: the runtime tells host from device itself. */
    memset(back, 0, N * sizeof(float));
    check("cudaMemcpy default, to the device", copy(d2, host, N * sizeof(float), DEFAULT));
    check("cudaMemcpy default, to the host", copy(back, d2, N * sizeof(float), DEFAULT));
    expect("a default round trip", memcmp(back, host, N * sizeof(float)) == 0);

    /* A stream: asynchronous copies, a memset, events, a host function. */
    cudaStream_t s = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    check("cudaStreamCreate", RT(cudaError_t, cudaStreamCreate, cudaStream_t *)(&s));
    check("cudaEventCreate", RT(cudaError_t, cudaEventCreate, cudaEvent_t *)(&e0));
    check("cudaEventCreate", RT(cudaError_t, cudaEventCreate, cudaEvent_t *)(&e1));
    cudaError_t (*copy_async)(void *, const void *, size_t, int, cudaStream_t) =
        RT(cudaError_t, cudaMemcpyAsync, void *, const void *, size_t, int, cudaStream_t);
    float *pinned = NULL;
    check("cudaMallocHost", RT(cudaError_t, cudaMallocHost, void **, size_t)((void **)&pinned, N * sizeof(float)));
    /* What the runtime knows of a pointer: the device's, and the guest's page-locked memory. */
    struct pointer_attributes pa = { .type = -1, .device = -1 };
    cudaError_t (*attributes)(struct pointer_attributes *, const void *) =
        RT(cudaError_t, cudaPointerGetAttributes, struct pointer_attributes *, const void *);
    check("cudaPointerGetAttributes of device memory", attributes(&pa, d));
    expect("device memory, device 0", pa.type == 2 && pa.device == 0 && pa.device_pointer == d);
    check("cudaPointerGetAttributes of page-locked memory", attributes(&pa, pinned + 5));
    expect("host memory", pa.type == 1 && pa.host_pointer == pinned + 5);
    check("cudaEventRecord", RT(cudaError_t, cudaEventRecord, cudaEvent_t, cudaStream_t)(e0, s));
    check("cudaMemcpyAsync host to device", copy_async(d, host, N * sizeof(float), H2D, s));
    check("cudaMemsetAsync", RT(cudaError_t, cudaMemsetAsync, void *, int, size_t, cudaStream_t)(d, 0, 64, s));
    check("cudaLaunchKernel on the stream", RT(cudaError_t, cudaLaunchKernel, const void *, dim3, dim3, void **, size_t,
                                               cudaStream_t)((const void *)add_one_stub, grid, block, args, 0, s));
    check("cudaMemcpyAsync device to host", copy_async(pinned, d, N * sizeof(float), D2H, s));
    int token = 42;
    check("cudaLaunchHostFunc",
          RT(cudaError_t, cudaLaunchHostFunc, cudaStream_t, void (*)(void *), void *)(s, host_function, &token));
    check("cudaEventRecord", RT(cudaError_t, cudaEventRecord, cudaEvent_t, cudaStream_t)(e1, s));
    check("cudaStreamSynchronize", RT(cudaError_t, cudaStreamSynchronize, cudaStream_t)(s));
    expect("the stream's copies, memset and kernel, in order",
           pinned[0] == 1.0f && pinned[15] == 1.0f && pinned[16] == 17.0f && pinned[N - 1] == (float)N);
    expect("the host function ran, before the synchronize returned", host_function_ran == 42);
    float ms = -1;
    check("cudaEventElapsedTime",
          RT(cudaError_t, cudaEventElapsedTime, float *, cudaEvent_t, cudaEvent_t)(&ms, e0, e1));
    expect("elapsed time", ms >= 0);

    /* A graph captured from the stream, launched twice. */
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    check("cudaStreamBeginCapture", RT(cudaError_t, cudaStreamBeginCapture, cudaStream_t, int)(s, 0));
    check("cudaLaunchKernel, captured", RT(cudaError_t, cudaLaunchKernel, const void *, dim3, dim3, void **, size_t,
                                           cudaStream_t)((const void *)add_one_stub, grid, block, args, 0, s));
    int status = 0;
    unsigned long long capture_id = 0;
    const void *const *deps = NULL;
    size_t ndeps = 0;
    check("cudaStreamGetCaptureInfo",
          RT(cudaError_t, cudaStreamGetCaptureInfo, cudaStream_t, int *, unsigned long long *, cudaGraph_t *,
             const void *const **, const void **, size_t *)(s, &status, &capture_id, &g, &deps, NULL, &ndeps));
    /* The nodes to depend on: as many as the driver says (the fake GPU's captures keep none). */
    expect("capturing, into a graph", status == 1 && capture_id != 0 && g && (ndeps == 0 || (deps && deps[0])));
    check("cudaStreamEndCapture", RT(cudaError_t, cudaStreamEndCapture, cudaStream_t, cudaGraph_t *)(s, &g));
    check("cudaGraphInstantiate",
          RT(cudaError_t, cudaGraphInstantiate, cudaGraphExec_t *, cudaGraph_t, unsigned long long)(&ge, g, 0));
    check("cudaGraphLaunch", RT(cudaError_t, cudaGraphLaunch, cudaGraphExec_t, cudaStream_t)(ge, s));
    check("cudaGraphLaunch", RT(cudaError_t, cudaGraphLaunch, cudaGraphExec_t, cudaStream_t)(ge, s));
    check("cudaStreamSynchronize", RT(cudaError_t, cudaStreamSynchronize, cudaStream_t)(s));
    check("cudaMemcpy device to host", copy(back, d, N * sizeof(float), D2H));
    expect("the graph ran twice", back[0] == 3.0f && back[N - 1] == (float)N + 2);

    /* A cooperative launch. */
    check("cudaLaunchCooperativeKernel", RT(cudaError_t, cudaLaunchCooperativeKernel, const void *, dim3, dim3, void **,
                                            size_t, cudaStream_t)((const void *)add_one_stub, grid, block, args, 0, s));
    check("cudaStreamSynchronize", RT(cudaError_t, cudaStreamSynchronize, cudaStream_t)(s));
    check("cudaMemcpy device to host", copy(back, d, N * sizeof(float), D2H));
    expect("the cooperative kernel ran", back[0] == 4.0f && back[N - 1] == (float)N + 3);

    check("cudaGraphExecDestroy", RT(cudaError_t, cudaGraphExecDestroy, cudaGraphExec_t)(ge));
    check("cudaGraphDestroy", RT(cudaError_t, cudaGraphDestroy, cudaGraph_t)(g));
    check("cudaFreeHost", RT(cudaError_t, cudaFreeHost, void *)(pinned));
    check("cudaStreamDestroy", RT(cudaError_t, cudaStreamDestroy, cudaStream_t)(s));
    check("cudaFree", RT(cudaError_t, cudaFree, void *)(d));
    check("cudaFree", RT(cudaError_t, cudaFree, void *)(d2));
    printf("runtime %d on driver %d: all ok\n", runtime, driver);
    free(host);
    free(back);
    return 0;
}
