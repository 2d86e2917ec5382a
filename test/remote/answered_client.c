/*
 * answered_client: the answers a guest keeps (forwarder/remote/guest/cuda/cache.c,
 * capture.c) stay the driver's, whatever changes them: each rule's calls
 * made many times, the call that changes the answer, and the answer again,
 * printed line by line so that a local run and a guest's compare
 * (test/remote/remote.sh, answers-kept-in-the-guest-stay-the-drivers).
 * Then, at exit, the guest's VGPU_TRACE=summary says how many crossed.
 *
 *   answered_client N     each query N times; waits for a line on stdin
 *                         before it exits (vgpu-smi --calls reads it then)
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *driver;
#define F(name) ((__typeof__(&name))sym(#name))

static void *sym(const char *name)
{
    void *p = dlsym(driver, name);
    if (!p) {
        fprintf(stderr, "answered_client: %s missing\n", name);
        exit(1);
    }
    return p;
}

static void check(const char *what, CUresult r)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "answered_client: %s: %d\n", what, (int)r);
        exit(1);
    }
}

#define MAX_DYNAMIC_SHARED CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
#define HEAP CU_LIMIT_MALLOC_HEAP_SIZE

static int n;

static size_t heap(void)
{
    size_t v = 0, w;
    for (int i = 0; i < n; i++) {
        check("cuCtxGetLimit", F(cuCtxGetLimit)(&w, HEAP));
        if (i && w != v) {
            fprintf(stderr, "answered_client: the heap's limit changed by itself\n");
            exit(1);
        }
        v = w;
    }
    return v;
}

/* Each answer of n the same as the first, or the client ends. */
static void same(const char *what, int i, long long first, long long now)
{
    if (i && now != first) {
        fprintf(stderr, "answered_client: %s changed by itself: %lld, then %lld\n", what, first, now);
        exit(1);
    }
}

static int capturing(CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_INVALIDATED, first = st;
    for (int i = 0; i < n; i++) {
        check("cuStreamIsCapturing", F(cuStreamIsCapturing)(s, &st));
        first = i ? first : st;
        same("a stream's capture status", i, first, st);
    }
    return (int)st;
}

static int dynamic_smem(CUfunction f)
{
    int v = -1, first = -1;
    for (int i = 0; i < n; i++) {
        check("cuFuncGetAttribute", F(cuFuncGetAttribute)(&v, MAX_DYNAMIC_SHARED, f));
        first = i ? first : v;
        same("a function's attribute", i, first, v);
    }
    return v;
}

/* The current context's id, asked n times: the same each time. */
static unsigned long long context_id(void)
{
    unsigned long long id = 0, again;
    for (int i = 0; i < n; i++) {
        check("cuCtxGetId", F(cuCtxGetId)(NULL, &again));
        if (i && again != id) {
            fprintf(stderr, "answered_client: the context's id changed by itself\n");
            exit(1);
        }
        id = again;
    }
    return id;
}

/* Another thread: a limit set in the primary context, which the main
 * thread's next ask sees; then a context of its own, current in it only,
 * with a limit of its own. */
static CUcontext primary;
static void *other_thread(void *unused)
{
    (void)unused;
    CUcontext mine, current;
    CUdevice dev;
    check("cuCtxSetCurrent", F(cuCtxSetCurrent)(primary));
    check("cuCtxSetLimit", F(cuCtxSetLimit)(HEAP, 32u << 20));
    check("cuDeviceGet", F(cuDeviceGet)(&dev, 0));
    check("cuCtxCreate", F(cuCtxCreate_v4)(&mine, NULL, 0, dev));
    check("cuCtxSetLimit", F(cuCtxSetLimit)(HEAP, 64u << 20));
    check("cuCtxGetCurrent", F(cuCtxGetCurrent)(&current));
    printf("other thread: its own context current %d, heap %zu MiB\n", current == mine, heap() >> 20);
    check("cuCtxDestroy", F(cuCtxDestroy_v2)(mine));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (n = atoi(argv[1])) < 1)
        return 2;
    driver = dlopen("libcuda.so.1", RTLD_NOW);
    if (!driver) {
        fprintf(stderr, "answered_client: %s\n", dlerror());
        return 1;
    }
    CUdevice dev;
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CUgraph g;
    int count = 0, version = 0, flags_active[2];
    unsigned flags;
    check("cuInit", F(cuInit)(0));
    check("cuDeviceGet", F(cuDeviceGet)(&dev, 0));
    check("cuDevicePrimaryCtxRetain", F(cuDevicePrimaryCtxRetain)(&primary, dev));
    check("cuCtxSetCurrent", F(cuCtxSetCurrent)(primary));
    check("cuModuleLoadData", F(cuModuleLoadData)(&mod, "fakegpu"));
    check("cuModuleGetFunction", F(cuModuleGetFunction)(&f, mod, "add_one"));

    /* The driver's lookup, of a name it has and of one it has not. */
    const char *names[2] = { "cuMemAlloc", "cuNoSuchCall" };
    for (int k = 0; k < 2; k++) {
        void *first = NULL, *fn = NULL;
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
        int same = 1;
        for (int i = 0; i < n; i++) {
            check("cuGetProcAddress", F(cuGetProcAddress_v2)(names[k], &fn, 12000, 0, &status));
            if (i == 0)
                first = fn;
            same &= fn == first;
        }
        printf("%s: found %d, status %d, the same each time %d\n", names[k], fn != NULL, (int)status, same);
    }

    /* Not kept: each crosses. */
    for (int i = 0; i < n; i++)
        check("cuDeviceGetCount", F(cuDeviceGetCount)(&count));
    printf("devices %d\n", count);
    /* The driver's version. */
    for (int i = 0; i < n; i++)
        check("cuDriverGetVersion", F(cuDriverGetVersion)(&version));
    printf("driver version %d\n", version);

    /* A limit: set here, and by another thread in the same context. */
    printf("heap %zu MiB\n", heap() >> 20);
    check("cuCtxSetLimit", F(cuCtxSetLimit)(HEAP, 16u << 20));
    printf("heap after a set %zu MiB\n", heap() >> 20);
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
    printf("heap after the other thread's set %zu MiB\n", heap() >> 20);

    /* A capture begun and ended. */
    check("cuStreamCreate", F(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING));
    printf("capturing before %d\n", capturing(s));
    check("cuStreamBeginCapture", F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    printf("capturing during %d, the legacy stream %d\n", capturing(s), capturing(NULL));
    check("cuStreamEndCapture", F(cuStreamEndCapture)(s, &g));
    printf("capturing after %d\n", capturing(s));
    /* An end that ends nothing leaves nothing open. */
    printf("an end of no capture: %d\n", (int)F(cuStreamEndCapture)(s, &g));
    printf("capturing after that %d\n", capturing(s));

    /* A function's attribute, set. */
    printf("dynamic shared memory %d\n", dynamic_smem(f));
    check("cuFuncSetAttribute", F(cuFuncSetAttribute)(f, MAX_DYNAMIC_SHARED, 4096));
    printf("dynamic shared memory after a set %d\n", dynamic_smem(f));
    for (int i = 0; i < n; i++) /* as frameworks do before each launch: the value it has */
        check("cuFuncSetAttribute", F(cuFuncSetAttribute)(f, MAX_DYNAMIC_SHARED, 4096));
    check("cuFuncSetAttribute", F(cuFuncSetAttribute)(f, MAX_DYNAMIC_SHARED, 8192));
    printf("dynamic shared memory after sets of 4096 and one of 8192 %d\n", dynamic_smem(f));
    printf("a set past the device's most: %d\n", (int)F(cuFuncSetAttribute)(f, MAX_DYNAMIC_SHARED, 1 << 30));
    printf("dynamic shared memory after it %d\n", dynamic_smem(f));
    unsigned long long id_before = context_id();

    /* A pageable copy before the reset (staged in a guest, through events
     * of the primary context, which the reset ends). */
    size_t two = 2u << 20;
    unsigned char *pattern = malloc(two), *again = malloc(two);
    CUdeviceptr early;
    for (size_t i = 0; i < two; i++)
        pattern[i] = (unsigned char)(i * 13 + 5);
    check("cuMemAlloc", F(cuMemAlloc_v2)(&early, two));
    check("cuMemcpyHtoD", F(cuMemcpyHtoD_v2)(early, pattern, two));
    check("cuMemcpyDtoH", F(cuMemcpyDtoH_v2)(again, early, two));
    printf("a pageable copy before the reset: %s\n", memcmp(pattern, again, two) ? "differ" : "match");

    /* A device reset: the primary context ends, and what was kept of it. */
    check("cuDevicePrimaryCtxGetState", F(cuDevicePrimaryCtxGetState)(dev, &flags, &flags_active[0]));
    check("cuDevicePrimaryCtxReset", F(cuDevicePrimaryCtxReset_v2)(dev));
    check("cuDevicePrimaryCtxGetState", F(cuDevicePrimaryCtxGetState)(dev, &flags, &flags_active[1]));
    printf("primary context active %d, after a reset %d\n", flags_active[0], flags_active[1]);
    check("cuDevicePrimaryCtxRetain", F(cuDevicePrimaryCtxRetain)(&primary, dev));
    check("cuCtxSetCurrent", F(cuCtxSetCurrent)(primary));
    printf("heap after a reset %zu MiB\n", heap() >> 20);
    printf("the context's id after a reset is another: %d\n", context_id() != id_before);

    /* Launches: sent, never waited for one by one. */
    CUdeviceptr x;
    int elements = 256;
    check("cuMemAlloc", F(cuMemAlloc_v2)(&x, elements * sizeof(float)));
    check("cuModuleLoadData", F(cuModuleLoadData)(&mod, "fakegpu"));
    check("cuModuleGetFunction", F(cuModuleGetFunction)(&f, mod, "add_one"));
    void *params[] = { &x, &elements };
    for (int i = 0; i < n; i++)
        check("cuLaunchKernel", F(cuLaunchKernel)(f, 1, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    check("cuCtxSynchronize", F(cuCtxSynchronize)());

    /* Pageable copies of more than a MiB (staged in a guest), each way,
     * synchronous and asynchronous, of a size no piece divides. */
    size_t big = (37u << 20) + 4093;
    unsigned char *out = malloc(big), *back = malloc(big);
    CUdeviceptr d;
    check("cuMemAlloc", F(cuMemAlloc_v2)(&d, big));
    for (size_t i = 0; i < big; i++)
        out[i] = (unsigned char)(i * 131 + (i >> 20));
    check("cuMemcpyHtoD", F(cuMemcpyHtoD_v2)(d, out, big));
    memset(back, 0, big);
    check("cuMemcpyDtoH", F(cuMemcpyDtoH_v2)(back, d, big));
    printf("pageable copies there and back: %s\n", memcmp(out, back, big) ? "differ" : "match");
    for (size_t i = 0; i < big; i++)
        out[i] = (unsigned char)(i * 7 + 3);
    check("cuMemcpyHtoDAsync", F(cuMemcpyHtoDAsync_v2)(d, out, big, s));
    memset(out, 0, big); /* an asynchronous pageable copy has taken its bytes when it returns */
    memset(back, 0, big);
    check("cuMemcpyDtoHAsync", F(cuMemcpyDtoHAsync_v2)(back, d, big, s));
    check("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    size_t wrong = 0;
    for (size_t i = 0; i < big; i++)
        wrong += back[i] != (unsigned char)(i * 7 + 3);
    printf("asynchronous pageable copies: %zu bytes wrong\n", wrong);
    free(out);
    free(back);

    /* A pageable copy on a stream of the other device, this one's context current. */
    CUdevice dev1;
    CUcontext ctx1;
    CUstream s1;
    CUdeviceptr far;
    check("cuDeviceGet", F(cuDeviceGet)(&dev1, 1));
    check("cuCtxCreate", F(cuCtxCreate_v4)(&ctx1, NULL, 0, dev1));
    check("cuStreamCreate", F(cuStreamCreate)(&s1, CU_STREAM_NON_BLOCKING));
    check("cuMemAlloc", F(cuMemAlloc_v2)(&far, two));
    check("cuCtxSetCurrent", F(cuCtxSetCurrent)(primary));
    memset(again, 0, two);
    check("cuMemcpyHtoDAsync on the other device", F(cuMemcpyHtoDAsync_v2)(far, pattern, two, s1));
    check("cuMemcpyDtoHAsync on the other device", F(cuMemcpyDtoHAsync_v2)(again, far, two, s1));
    check("cuStreamSynchronize", F(cuStreamSynchronize)(s1));
    printf("pageable copies on the other device's stream: %s\n", memcmp(pattern, again, two) ? "differ" : "match");

    /* A pageable copy on a stream does not wait for another stream's work:
     * the first stream is busy for a second with a copy queued behind
     * (the fake's streams share one timeline: the copy there waits anyway;
     * the guest's record says it asked and did not wait). */
    CUstream busy_stream, idle_stream;
    CUfunction busy;
    unsigned long long ns = 1000000000ull;
    void *busy_params[] = { &ns };
    check("cuModuleGetFunction", F(cuModuleGetFunction)(&busy, mod, "busy"));
    check("cuStreamCreate", F(cuStreamCreate)(&busy_stream, CU_STREAM_NON_BLOCKING));
    check("cuStreamCreate", F(cuStreamCreate)(&idle_stream, CU_STREAM_NON_BLOCKING));
    check("cuLaunchKernel busy", F(cuLaunchKernel)(busy, 1, 1, 1, 1, 1, 1, 0, busy_stream, busy_params, NULL));
    check("cuMemcpyHtoDAsync behind it", F(cuMemcpyHtoDAsync_v2)(d, pattern, two, busy_stream));
    check("cuMemcpyHtoDAsync on another stream", F(cuMemcpyHtoDAsync_v2)(x, pattern, 1024, idle_stream));
    check("cuMemcpyHtoDAsync of 2 MiB on another stream", F(cuMemcpyHtoDAsync_v2)(d + two, pattern, two, idle_stream));
    check("cuStreamSynchronize", F(cuStreamSynchronize)(busy_stream));
    check("cuStreamSynchronize", F(cuStreamSynchronize)(idle_stream));
    free(pattern);
    free(again);
    printf("done\n");
    fflush(stdout);
    char line[8];
    if (!fgets(line, sizeof(line), stdin))
        return 0;
    return 0;
}
