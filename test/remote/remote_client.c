/*
 * remote_client: the paths a CUDA program takes, printed line by line so that
 * a run on a local driver and one on a remote GPU can be compared
 * (test/remote/remote.sh).  It loads the driver as applications do
 * (dlopen("libcuda.so.1"), which is vgpu) on the fake GPU's kernels.
 *
 *   remote_client paths          devices, contexts, memory, copies, modules,
 *                                linking and launches, streams, events, errors: the cases
 *                                of paths_cases, each after a line "-- CASE"
 *   remote_client quota BYTES    allocates BYTES at once: prints the result
 *   remote_client hold BYTES     allocates BYTES, prints "held", waits to be killed
 *   remote_client images         a module image of 256 KiB loaded as a module, a
 *                                library and a module with JIT options, a kernel
 *                                of each
 *   remote_client pinned-kept FIFO  a page-locked MiB filled, "held"; at a line
 *                                from FIFO an allocation (its code printed), at
 *                                another whether the MiB still holds its bytes
 *   remote_client two-calls FIFO a context, then (once a line comes from FIFO)
 *                                an allocation: prints "second: CODE"
 *   remote_client late-error     a launch the driver refuses, then synchronizes
 *   remote_client forged         calls with handles it was never given
 *   remote_client maps           prints the driver libraries it has mapped
 *   remote_client layout         cuBLASLt's private table: the device's layout
 *   remote_client pinned         page-locked memory: copies of 32 MiB each way,
 *                                plain and asynchronous, every byte checked, a
 *                                child of fork that writes its copy of a block,
 *                                and a kernel that writes a mapped block
 *   remote_client threads        8 threads copying, launching and reading back at
 *                                once, each on its own stream and memory
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

static void *driver;
#define F(name) ((__typeof__(&name))sym(#name))

static void *sym(const char *name)
{
    void *p = dlsym(driver, name);
    if (!p) {
        fprintf(stderr, "remote_client: %s missing\n", name);
        exit(1);
    }
    return p;
}

/* The case that runs, named when a call fails. */
static const char *current_case = "";

#define SHOW(what, call)                                                                                               \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        printf("%s: %d\n", what, (int)r_);                                                                             \
        if (r_ != CUDA_SUCCESS && strict) {                                                                            \
            fprintf(stderr, "remote_client: %s: %s failed\n", current_case, what);                                     \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static int strict = 1;

/* ---- paths: the cases, in order, each going on from what those before it made ---- */

enum { N = 1 << 20 };
static struct {
    CUdevice dev;
    CUcontext ctx;
    float *host; /* N floats, and as many on the device at d */
    CUdeviceptr d;
    CUmodule mod;
    CUfunction add_one;
    int count;
    CUstream s;
    CUevent e0, e1;
    CUdeviceptr pitched; /* 512 bytes the 2D copies fill and the tensor maps describe */
} p;

static void the_driver(void)
{
    int n = 0, v = 0;
    SHOW("cuInit", F(cuInit)(0));
    SHOW("cuDriverGetVersion", F(cuDriverGetVersion)(&v));
    printf("driver version %d\n", v);
    SHOW("cuDeviceGetCount", F(cuDeviceGetCount)(&n));
    printf("devices %d\n", n);
}

/* The runtime's way: a function by name, version and flags. */
static void functions_by_address(void)
{
    int n = 0;
    CUresult (*get_count)(int *) = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    SHOW("cuGetProcAddress_v2", F(cuGetProcAddress_v2)("cuDeviceGetCount", (void **)&get_count, 13000, 0, &status));
    printf("status %d\n", (int)status);
    SHOW("cuDeviceGetCount by its address", get_count(&n));
    printf("devices %d\n", n);
    void *none = &n;
    SHOW("cuGetProcAddress_v2 missing", (strict = 0, F(cuGetProcAddress_v2)("cuNoSuchCall", &none, 13000, 0, &status)));
    strict = 1;
    printf("status %d, pointer %p\n", (int)status, none);
}

static void the_device(void)
{
    SHOW("cuDeviceGet", F(cuDeviceGet)(&p.dev, 0));
    char name[64];
    SHOW("cuDeviceGetName", F(cuDeviceGetName)(name, sizeof(name), p.dev));
    printf("name %s\n", name);
    CUuuid u;
    SHOW("cuDeviceGetUuid_v2", F(cuDeviceGetUuid_v2)(&u, p.dev));
    printf("uuid %02x%02x..%02x\n", (unsigned char)u.bytes[0], (unsigned char)u.bytes[1], (unsigned char)u.bytes[15]);
    size_t total = 0;
    SHOW("cuDeviceTotalMem_v2", F(cuDeviceTotalMem_v2)(&total, p.dev));
    printf("total memory %zu\n", total);
    int major = 0;
    SHOW("cuDeviceGetAttribute", F(cuDeviceGetAttribute)(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, p.dev));
    printf("compute capability major %d\n", major);
}

/* What a remote guest keeps of answers (the current context, its device,
 * the primary context's state) follows each change. */
static void the_current_context(void)
{
    unsigned flags = 0;
    int active = -1;
    CUcontext cur = (CUcontext)1;
    SHOW("cuDevicePrimaryCtxGetState", F(cuDevicePrimaryCtxGetState)(p.dev, &flags, &active));
    printf("primary context active %d\n", active);
    SHOW("cuCtxGetCurrent", F(cuCtxGetCurrent)(&cur));
    printf("current before %s\n", cur ? "a context" : "none");
    SHOW("cuDevicePrimaryCtxRetain", F(cuDevicePrimaryCtxRetain)(&p.ctx, p.dev));
    SHOW("cuDevicePrimaryCtxGetState", F(cuDevicePrimaryCtxGetState)(p.dev, &flags, &active));
    printf("primary context active %d\n", active);
    SHOW("cuCtxGetCurrent", F(cuCtxGetCurrent)(&cur));
    printf("current after the retain %s\n", cur ? "a context" : "none");
    SHOW("cuCtxSetCurrent", F(cuCtxSetCurrent)(p.ctx));
    SHOW("cuCtxGetCurrent", F(cuCtxGetCurrent)(&cur));
    printf("current is retained %d\n", cur == p.ctx);
    CUdevice of = -1;
    SHOW("cuCtxGetDevice", F(cuCtxGetDevice)(&of));
    printf("current context's device %d\n", (int)of);
    SHOW("cuCtxSetCurrent NULL", F(cuCtxSetCurrent)(NULL));
    SHOW("cuCtxGetCurrent", F(cuCtxGetCurrent)(&cur));
    printf("current after it is unset %s\n", cur ? "a context" : "none");
    SHOW("cuCtxGetDevice none", (strict = 0, F(cuCtxGetDevice)(&of)));
    strict = 1;
    SHOW("cuCtxSetCurrent", F(cuCtxSetCurrent)(p.ctx));
}

static void memory_and_a_module(void)
{
    p.host = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++)
        p.host[i] = (float)i;
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&p.d, N * sizeof(float)));
    SHOW("cuMemcpyHtoD_v2", F(cuMemcpyHtoD_v2)(p.d, p.host, N * sizeof(float)));
    SHOW("cuModuleLoadData", F(cuModuleLoadData)(&p.mod, "fakegpu"));
    SHOW("cuModuleGetFunction", F(cuModuleGetFunction)(&p.add_one, p.mod, "add_one"));
    SHOW("cuModuleGetFunction missing", (strict = 0, F(cuModuleGetFunction)(&p.add_one, p.mod, "no_such_kernel")));
    strict = 1;
    SHOW("cuModuleGetFunction", F(cuModuleGetFunction)(&p.add_one, p.mod, "add_one"));
}

/* The JIT's options: its logs, their lengths, the wall time and the threads
 * a block come back; a failed load's error log too. */
static void jit_options(void)
{
    char info_log[64], error_log[64];
    for (int bad = 0; bad < 2; bad++) {
        memset(info_log, '#', sizeof(info_log));
        memset(error_log, '#', sizeof(error_log));
        CUjit_option jit[6] = { CU_JIT_INFO_LOG_BUFFER,  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                                CU_JIT_WALL_TIME,        CU_JIT_THREADS_PER_BLOCK };
        void *jit_values[6] = { info_log,  (void *)(uintptr_t)sizeof(info_log),
                                error_log, (void *)(uintptr_t)sizeof(error_log),
                                NULL,      (void *)(uintptr_t)256 };
        CUmodule jitted = NULL;
        SHOW(bad ? "cuModuleLoadDataEx of no image" : "cuModuleLoadDataEx",
             (strict = 0, F(cuModuleLoadDataEx)(&jitted, bad ? "not an image" : "fakegpu", 6, jit, jit_values)));
        strict = 1;
        float ms;
        memcpy(&ms, &jit_values[4], sizeof(ms));
        printf("jit: info \"%.40s\" (%zu), error \"%.40s\" (%zu), %.1f ms, %zu threads\n", info_log,
               (size_t)(uintptr_t)jit_values[1], error_log[0] == '#' ? "" : error_log, (size_t)(uintptr_t)jit_values[3],
               ms, (size_t)(uintptr_t)jit_values[5]);
        if (jitted)
            SHOW("cuModuleUnload", F(cuModuleUnload)(jitted));
    }
}

/* Modules and libraries from files (the way Triton's launcher loads its
 * cubins) and a fat binary: each load's kernel is found; a missing file
 * is the driver's FILE_NOT_FOUND, an image it cannot read INVALID_IMAGE. */
static void modules_from_files(void)
{
    char path[] = "/tmp/remote_client.image.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, "fakegpu from a file", 19) != 19) {
        fprintf(stderr, "remote_client: %s: cannot write %s\n", current_case, path);
        exit(1);
    }
    close(fd);
    CUmodule m = NULL;
    CUfunction f = NULL;
    SHOW("cuModuleLoad", F(cuModuleLoad)(&m, path));
    SHOW("cuModuleGetFunction", F(cuModuleGetFunction)(&f, m, "add_one"));
    SHOW("cuModuleUnload", F(cuModuleUnload)(m));
    CUlibrary lib = NULL;
    CUkernel k = NULL;
    SHOW("cuLibraryLoadFromFile", F(cuLibraryLoadFromFile)(&lib, path, NULL, NULL, 0, NULL, NULL, 0));
    SHOW("cuLibraryGetKernel", F(cuLibraryGetKernel)(&k, lib, "add_one"));
    SHOW("cuLibraryUnload", F(cuLibraryUnload)(lib));
    SHOW("cuModuleLoadFatBinary", F(cuModuleLoadFatBinary)(&m, "fakegpu as a fat binary"));
    SHOW("cuModuleGetFunction", F(cuModuleGetFunction)(&f, m, "add_one"));
    SHOW("cuModuleUnload", F(cuModuleUnload)(m));
    strict = 0;
    SHOW("cuModuleLoad of a missing file", F(cuModuleLoad)(&m, "/nonexistent/remote_client.cubin"));
    SHOW("cuLibraryLoadFromFile of a missing file",
         F(cuLibraryLoadFromFile)(&lib, "/nonexistent/remote_client.cubin", NULL, NULL, 0, NULL, NULL, 0));
    fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0 || write(fd, "not an image", 12) != 12) {
        fprintf(stderr, "remote_client: %s: cannot write %s\n", current_case, path);
        exit(1);
    }
    close(fd);
    SHOW("cuModuleLoad of no image", F(cuModuleLoad)(&m, path));
    strict = 1;
    unlink(path);
}

/* The JIT linker as Numba and CuPy's linker drive it: inputs from memory
 * (one a fatbin wrapper, whose fatbin a guest sends) and a file, the logs and the wall time, the image loaded as a module; a
 * link of an input the linker refuses fails, its error log saying why
 * (a remote guest hears it from cuLinkComplete, not the add). */
static void jit_linking(void)
{
    char path[] = "/tmp/remote_client.link.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, "fakegpu object", 14) != 14) {
        fprintf(stderr, "remote_client: %s: cannot write %s\n", current_case, path);
        exit(1);
    }
    close(fd);
    for (int bad = 0; bad < 2; bad++) {
        char info_log[96], error_log[96];
        memset(info_log, 0, sizeof(info_log));
        memset(error_log, 0, sizeof(error_log));
        CUjit_option jit[5] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                                CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_WALL_TIME };
        void *values[5] = { info_log, (void *)(uintptr_t)sizeof(info_log), error_log,
                            (void *)(uintptr_t)sizeof(error_log), NULL };
        CUlinkState link = NULL;
        SHOW("cuLinkCreate_v2", F(cuLinkCreate_v2)(5, jit, values, &link));
        char ptx[] = "fakegpu ptx";
        SHOW("cuLinkAddData_v2", F(cuLinkAddData_v2)(link, CU_JIT_INPUT_PTX, ptx, sizeof(ptx), "kernels.ptx", 0, NULL,
                                                      NULL));
        static const char fatbin[] = "fakegpu fatbin";
        const struct {
            unsigned magic, version;
            const void *data, *prelinked;
        } wrapper = { 0x466243b1, 1, fatbin, NULL };
        SHOW("cuLinkAddData_v2 of a fatbin wrapper", F(cuLinkAddData_v2)(link, CU_JIT_INPUT_FATBINARY, (void *)&wrapper,
                                                                           sizeof(wrapper), "wrapped", 0, NULL, NULL));
        SHOW("cuLinkAddFile_v2", F(cuLinkAddFile_v2)(link, CU_JIT_INPUT_OBJECT, path, 0, NULL, NULL));
        void *image = NULL;
        size_t size = 0;
        CUresult added = CUDA_SUCCESS, linked;
        if (bad) {
            char junk[] = "not an input";
            added = F(cuLinkAddData_v2)(link, CU_JIT_INPUT_CUBIN, junk, sizeof(junk), "junk.cubin", 0, NULL, NULL);
            linked = added == CUDA_SUCCESS ? F(cuLinkComplete)(link, &image, &size) : added;
            printf("the link of a bad input fails with %d\n", (int)linked);
        } else {
            SHOW("cuLinkComplete", (linked = F(cuLinkComplete)(link, &image, &size)));
            /* the file's name is its path, which differs run to run: cut at it */
            printf("linked %zu bytes: %.*s\n", size, (int)(strstr(image, ", /tmp/") - (char *)image), (char *)image);
            CUmodule mod = NULL;
            CUfunction f = NULL;
            SHOW("cuModuleLoadData of the linked image", F(cuModuleLoadData)(&mod, image));
            SHOW("cuModuleGetFunction", F(cuModuleGetFunction)(&f, mod, "add_one"));
            SHOW("cuModuleUnload", F(cuModuleUnload)(mod));
        }
        float ms;
        memcpy(&ms, &values[4], sizeof(ms));
        printf("link: info \"%s\" (%zu), error \"%.40s\" (%zu), %.1f ms\n", info_log, (size_t)(uintptr_t)values[1],
               error_log, (size_t)(uintptr_t)values[3], bad ? 0.0f : ms);
        SHOW("cuLinkDestroy", F(cuLinkDestroy)(link));
    }
    unlink(path);
    strict = 0;
    CUlinkState none = NULL;
    SHOW("cuLinkDestroy of no link", F(cuLinkDestroy)((CUlinkState)&none));
    strict = 1;
}

/* A created context's execution affinity, as cuCtxGetExecAffinity answers it. */
static void print_affinity(const char *how)
{
    CUexecAffinityParam a = { 0 };
    SHOW("cuCtxGetExecAffinity", F(cuCtxGetExecAffinity)(&a, CU_EXEC_AFFINITY_TYPE_SM_COUNT));
    printf("%s: %u SMs\n", how, a.param.smCount.val);
}

/* Contexts as each version of cuCtxCreate makes them (CUDA 13's header
 * spells cuCtxCreate as _v4), current once made, with the execution
 * affinity they were given; what a driver refuses, refused alike. */
static void contexts_of_every_version(void)
{
    CUcontext c = NULL, cur = NULL;
    SHOW("cuCtxCreate_v4 without parameters", F(cuCtxCreate_v4)(&c, NULL, 0, p.dev));
    SHOW("cuCtxGetCurrent", F(cuCtxGetCurrent)(&cur));
    printf("the new context is current %d\n", cur == c);
    print_affinity("cuCtxCreate_v4 without parameters");
    SHOW("cuCtxDestroy_v2", F(cuCtxDestroy_v2)(c));
    CUexecAffinityParam half = { .type = CU_EXEC_AFFINITY_TYPE_SM_COUNT, .param.smCount.val = 66 };
    SHOW("cuCtxCreate_v3", F(cuCtxCreate_v3)(&c, &half, 1, 0, p.dev));
    print_affinity("cuCtxCreate_v3 of 66 SMs");
    SHOW("cuCtxDestroy_v2", F(cuCtxDestroy_v2)(c));
    CUexecAffinityParam quarter = { .type = CU_EXEC_AFFINITY_TYPE_SM_COUNT, .param.smCount.val = 33 };
    CUctxCreateParams params = { .execAffinityParams = &quarter, .numExecAffinityParams = 1 };
    SHOW("cuCtxCreate_v4", F(cuCtxCreate_v4)(&c, &params, 0, p.dev));
    print_affinity("cuCtxCreate_v4 of 33 SMs");
    SHOW("cuCtxDestroy_v2", F(cuCtxDestroy_v2)(c));
    SHOW("cuCtxCreate_v2", F(cuCtxCreate_v2)(&c, 0, p.dev));
    print_affinity("cuCtxCreate_v2");
    SHOW("cuCtxDestroy_v2", F(cuCtxDestroy_v2)(c));
    strict = 0;
    CUexecAffinityParam none = { .type = CU_EXEC_AFFINITY_TYPE_SM_COUNT, .param.smCount.val = 0 };
    SHOW("cuCtxCreate_v3 of no SMs", F(cuCtxCreate_v3)(&c, &none, 1, 0, p.dev));
    SHOW("cuCtxCreate_v3 of a negative count", F(cuCtxCreate_v3)(&c, &half, -1, 0, p.dev));
    CUctxCigParam cig = { .sharedDataType = CIG_DATA_TYPE_NV_BLOB, .sharedData = &cig };
    CUctxCreateParams in_graphics = { .cigParams = &cig };
    SHOW("cuCtxCreate_v4 in graphics", F(cuCtxCreate_v4)(&c, &in_graphics, 0, p.dev));
    strict = 1;
    SHOW("cuCtxSetCurrent", F(cuCtxSetCurrent)(p.ctx));
}

/* A device by its PCI bus id, as NCCL and NVML-minded programs find theirs. */
static void a_device_by_its_bus_id(void)
{
    char bus[32];
    CUdevice dev = -1;
    SHOW("cuDeviceGetPCIBusId", F(cuDeviceGetPCIBusId)(bus, sizeof(bus), p.dev));
    printf("bus id %s\n", bus);
    SHOW("cuDeviceGetByPCIBusId", F(cuDeviceGetByPCIBusId)(&dev, bus));
    printf("the device of its bus id %d\n", dev == p.dev);
    strict = 0;
    SHOW("cuDeviceGetByPCIBusId of no device", F(cuDeviceGetByPCIBusId)(&dev, "0000:ff:1f.0"));
    strict = 1;
}

/* Elements of the N at d that are not their index plus added (element 1: one). */
static int elements_wrong(float one, float added)
{
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(p.host, p.d, N * sizeof(float)));
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += p.host[i] != (i == 1 ? one : (float)i + added);
    return wrong;
}

static void a_launch_timed_by_events(void)
{
    p.count = N;
    void *params[] = { &p.d, &p.count };
    SHOW("cuStreamCreate", F(cuStreamCreate)(&p.s, CU_STREAM_NON_BLOCKING));
    SHOW("cuEventCreate", F(cuEventCreate)(&p.e0, CU_EVENT_DEFAULT));
    SHOW("cuEventCreate", F(cuEventCreate)(&p.e1, CU_EVENT_DEFAULT));
    SHOW("cuEventRecord", F(cuEventRecord)(p.e0, p.s));
    SHOW("cuLaunchKernel", F(cuLaunchKernel)(p.add_one, N / 256, 1, 1, 256, 1, 1, 0, p.s, params, NULL));
    SHOW("cuEventRecord", F(cuEventRecord)(p.e1, p.s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(p.s));
    float ms = -1;
    SHOW("cuEventElapsedTime", F(cuEventElapsedTime)(&ms, p.e0, p.e1));
    printf("elapsed is a time %d\n", ms >= 0);
    SHOW("cuMemsetD32_v2", F(cuMemsetD32_v2)(p.d + 4, 0x40400000u /* 3.0f */, 1));
    SHOW("cuCtxSynchronize", F(cuCtxSynchronize)());
    memset(p.host, 0, N * sizeof(float));
    printf("elements wrong after the kernel %d\n", elements_wrong(3.0f, 1));
}

/* The same kernel with its parameters as one buffer, each at the offset the
 * driver gives (as cuBLASLt launches), through cuLaunchKernelEx; a buffer
 * too short for them is refused. */
static void parameters_in_one_buffer(void)
{
    size_t offset[2], psize[2];
    SHOW("cuFuncGetParamInfo", F(cuFuncGetParamInfo)(p.add_one, 0, &offset[0], &psize[0]));
    SHOW("cuFuncGetParamInfo", F(cuFuncGetParamInfo)(p.add_one, 1, &offset[1], &psize[1]));
    char buffer[64] = { 0 };
    memcpy(buffer + offset[0], &p.d, psize[0]);
    memcpy(buffer + offset[1], &p.count, psize[1]);
    size_t buffer_size = offset[1] + psize[1];
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &buffer_size,
                      CU_LAUNCH_PARAM_END };
    CUlaunchConfig config = { .gridDimX = N / 256,
                              .gridDimY = 1,
                              .gridDimZ = 1,
                              .blockDimX = 256,
                              .blockDimY = 1,
                              .blockDimZ = 1,
                              .hStream = p.s };
    SHOW("cuLaunchKernelEx with a parameter buffer", F(cuLaunchKernelEx)(&config, p.add_one, NULL, extra));
    size_t short_size = buffer_size - 1;
    void *short_extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &short_size,
                            CU_LAUNCH_PARAM_END };
    SHOW("cuLaunchKernel with a short parameter buffer",
         (strict = 0, F(cuLaunchKernel)(p.add_one, N / 256, 1, 1, 256, 1, 1, 0, p.s, NULL, short_extra)));
    strict = 1;
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(p.s));
    printf("elements wrong after the buffer's kernel %d\n", elements_wrong(4.0f, 2));
}

/* 2D copies: a 6 x 5 block from guest memory of pitch 16 (from x 2) into
 * device memory of pitch 32 (at x 3, y 1); device to device,
 * asynchronously; back into guest memory of pitch 8, asynchronously; and
 * one whose rows run past the allocation, refused. */
static void copies_in_2d(void)
{
    unsigned char block[5][16], rows[5][8];
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 16; x++)
            block[y][x] = (unsigned char)(y * 16 + x);
    memset(rows, 0xee, sizeof(rows));
    SHOW("cuMemAlloc_v2 pitched", F(cuMemAlloc_v2)(&p.pitched, 512));
    SHOW("cuMemsetD8_v2 pitched", F(cuMemsetD8_v2)(p.pitched, 0, 512));
    CUDA_MEMCPY2D c2 = { .srcXInBytes = 2,
                         .srcMemoryType = CU_MEMORYTYPE_HOST,
                         .srcHost = block,
                         .srcPitch = 16,
                         .dstXInBytes = 3,
                         .dstY = 1,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                         .dstDevice = p.pitched,
                         .dstPitch = 32,
                         .WidthInBytes = 6,
                         .Height = 5 };
    SHOW("cuMemcpy2D_v2 to the device", F(cuMemcpy2D_v2)(&c2));
    CUDA_MEMCPY2D d2 = { .srcXInBytes = 3,
                         .srcY = 1,
                         .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                         .srcDevice = p.pitched,
                         .srcPitch = 32,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                         .dstDevice = p.pitched + 256,
                         .dstPitch = 32,
                         .WidthInBytes = 6,
                         .Height = 5 };
    SHOW("cuMemcpy2DAsync_v2 device to device", F(cuMemcpy2DAsync_v2)(&d2, p.s));
    CUDA_MEMCPY2D h2 = { .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                         .srcDevice = p.pitched + 256,
                         .srcPitch = 32,
                         .dstMemoryType = CU_MEMORYTYPE_HOST,
                         .dstHost = rows,
                         .dstPitch = 8,
                         .WidthInBytes = 6,
                         .Height = 5 };
    SHOW("cuMemcpy2DAsync_v2 to the guest", F(cuMemcpy2DAsync_v2)(&h2, p.s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(p.s));
    int wrong = 0;
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 8; x++)
            wrong += rows[y][x] != (x < 6 ? block[y][2 + x] : 0xee);
    printf("bytes wrong after the 2D copies %d\n", wrong);
    unsigned char tall[20][16] = { { 0 } };
    c2.srcHost = tall;
    c2.Height = 20;
    SHOW("cuMemcpy2D_v2 past the allocation", (strict = 0, F(cuMemcpy2D_v2)(&c2)));
    strict = 1;
}

/* A tensor map made by call: printed as whether its first word is address
 * and the sum of the others (the addresses differ between runs). */
#define SHOW_MAP(what, call, address)                                                                                  \
    do {                                                                                                               \
        memset(&map, 0, sizeof(map));                                                                                  \
        SHOW(what, call);                                                                                              \
        uint64_t sum_ = 0;                                                                                             \
        for (int i_ = 1; i_ < CU_TENSOR_MAP_NUM_QWORDS; i_++)                                                          \
            sum_ += map.opaque[i_] * (uint64_t)i_;                                                                     \
        printf("%s: address %d, words %llx\n", what, map.opaque[0] == (address), (unsigned long long)sum_);            \
    } while (0)

/* Tensor maps of the 2D copies' memory: tiled, im2col, im2col wide, an
 * address replaced, a rank refused. */
static void tensor_maps(void)
{
    CUtensorMap map;
    CUdeviceptr pitched = p.pitched;
    cuuint64_t dims[3] = { 8, 4, 2 }, strides[2] = { 32, 128 };
    cuuint32_t box[3] = { 8, 4, 1 }, estrides[3] = { 1, 1, 1 };
    int lower[1] = { -1 }, upper[1] = { 1 };
    SHOW_MAP("cuTensorMapEncodeTiled",
             F(cuTensorMapEncodeTiled)(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, (void *)(uintptr_t)pitched, dims,
                                       strides, box, estrides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                       CU_TENSOR_MAP_L2_PROMOTION_L2_64B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
             pitched);
    SHOW("cuTensorMapReplaceAddress", F(cuTensorMapReplaceAddress)(&map, (void *)(uintptr_t)(pitched + 256)));
    printf("replaced address %d\n", map.opaque[0] == pitched + 256);
    SHOW_MAP("cuTensorMapEncodeIm2col",
             F(cuTensorMapEncodeIm2col)(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, (void *)(uintptr_t)pitched, dims,
                                        strides, lower, upper, 4, 8, estrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                        CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA),
             pitched);
    SHOW_MAP("cuTensorMapEncodeIm2colWide",
             F(cuTensorMapEncodeIm2colWide)(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)(uintptr_t)pitched, dims,
                                            strides, -2, 2, 4, 8, estrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128, CU_TENSOR_MAP_SWIZZLE_128B,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
             pitched);
    SHOW("cuTensorMapEncodeTiled rank 0",
         (strict = 0,
          F(cuTensorMapEncodeTiled)(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 0, (void *)(uintptr_t)pitched, dims, strides,
                                    box, estrides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                    CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)));
    strict = 1;
    SHOW("cuMemFree_v2 pitched", F(cuMemFree_v2)(pitched));
}

/* Page-locked memory set by its address (as XLA sets flags in it), on a
 * stream; a memset that runs far past it refused. */
static void page_locked_memory_by_its_address(void)
{
    unsigned int *pinned;
    SHOW("cuMemAllocHost_v2 to set", F(cuMemAllocHost_v2)((void **)&pinned, 64));
    memset(pinned, 0, 64);
    SHOW("cuMemsetD32Async on page-locked memory",
         F(cuMemsetD32Async)((CUdeviceptr)(uintptr_t)(pinned + 1), 0x01020304u, 3, p.s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(p.s));
    printf("page-locked words %x %x %x %x %x\n", pinned[0], pinned[1], pinned[2], pinned[3], pinned[4]);
    /* The same memory named as the GPU's side of copies. */
    unsigned int word = 0, back_word = 0;
    SHOW("cuMemcpyDtoH_v2 from page-locked memory",
         F(cuMemcpyDtoH_v2)(&word, (CUdeviceptr)(uintptr_t)(pinned + 1), sizeof(word)));
    word += 1;
    SHOW("cuMemcpyHtoD_v2 into page-locked memory",
         F(cuMemcpyHtoD_v2)((CUdeviceptr)(uintptr_t)(pinned + 5), &word, sizeof(word)));
    SHOW("cuMemcpyDtoDAsync_v2 from page-locked memory",
         F(cuMemcpyDtoDAsync_v2)(p.d, (CUdeviceptr)(uintptr_t)(pinned + 5), sizeof(word), p.s));
    SHOW("cuMemcpyDtoH_v2 of it", F(cuMemcpyDtoH_v2)(&back_word, p.d, sizeof(back_word)));
    printf("page-locked copies %x %x\n", pinned[5], back_word);
    SHOW("cuMemsetD2D8_v2 on page-locked memory", F(cuMemsetD2D8_v2)((CUdeviceptr)(uintptr_t)pinned, 16, 0xab, 2, 3));
    printf("page-locked rows %x %x %x %x\n", pinned[0], pinned[4], pinned[8], pinned[12]);
    SHOW("cuMemsetD8_v2 past page-locked memory",
         (strict = 0, F(cuMemsetD8_v2)((CUdeviceptr)(uintptr_t)pinned + 60, 7, 1 << 20)));
    strict = 1;
    SHOW("cuMemFreeHost to set", F(cuMemFreeHost)(pinned));
}

static void memory_info_and_error_strings(void)
{
    size_t free_b = 0, total_b = 0;
    SHOW("cuMemGetInfo_v2", F(cuMemGetInfo_v2)(&free_b, &total_b));
    printf("memory info total %zu\n", total_b);
    const char *str = NULL;
    SHOW("cuGetErrorString", F(cuGetErrorString)(CUDA_ERROR_INVALID_VALUE, &str));
    printf("error string %s\n", str);
    SHOW("cuGetErrorName", F(cuGetErrorName)(CUDA_ERROR_OUT_OF_MEMORY, &str));
    printf("error name %s\n", str);
}

/* Page-locked host memory as a staging buffer. */
static void a_staging_buffer(void)
{
    unsigned *staging = NULL;
    SHOW("cuMemAllocHost_v2", F(cuMemAllocHost_v2)((void **)&staging, 4096));
    for (int i = 0; i < 1024; i++)
        staging[i] = 0xabc00000u + (unsigned)i;
    SHOW("cuMemcpyHtoD_v2 from it", F(cuMemcpyHtoD_v2)(p.d, staging, 4096));
    memset(staging, 0, 4096);
    SHOW("cuMemcpyDtoH_v2 into it", F(cuMemcpyDtoH_v2)(staging, p.d, 4096));
    printf("staged word %x\n", staging[1023]);
    SHOW("cuMemFreeHost", F(cuMemFreeHost)(staging));
    SHOW("cuMemFreeHost twice", (strict = 0, F(cuMemFreeHost)(staging)));
    strict = 1;
}

/* A struct the call reads (its descriptor), and one it writes back. */
static void an_array(void)
{
    CUDA_ARRAY_DESCRIPTOR desc = { 256, 64, CU_AD_FORMAT_FLOAT, 4 }, back;
    CUarray array;
    SHOW("cuArrayCreate_v2", F(cuArrayCreate_v2)(&array, &desc));
    memset(&back, 0, sizeof(back));
    SHOW("cuArrayGetDescriptor_v2", F(cuArrayGetDescriptor_v2)(&back, array));
    printf("array %zux%zu, %u channels\n", back.Width, back.Height, back.NumChannels);
    SHOW("cuArrayDestroy", F(cuArrayDestroy)(array));
}

/* The sum of n bytes, each weighted by its place: what a copy left, told
 * apart from the same bytes elsewhere. */
static unsigned long long weighed(const void *bytes, size_t n)
{
    unsigned long long sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (unsigned long long)((const unsigned char *)bytes)[i] * (i % 251 + 1);
    return sum;
}

/* Copies with arrays and in three dimensions: the guest's memory to an
 * array and back (whole and from an offset, plainly and on a stream), an
 * array to and from device memory, 3D boxes between padded host memory,
 * an array and pitched device memory; a copy past an array, and one of a
 * mipmap level, refused. */
static void arrays_and_3d_copies(void)
{
    enum { W = 64, H = 8, D = 4, ROW = W * 4, BYTES = ROW * H * D };
    CUDA_ARRAY3D_DESCRIPTOR desc = { .Width = W, .Height = H, .Depth = D, .Format = CU_AD_FORMAT_FLOAT,
                                     .NumChannels = 1 };
    CUarray array;
    SHOW("cuArray3DCreate_v2", F(cuArray3DCreate_v2)(&array, &desc));
    static unsigned char host[BYTES], back[BYTES], padded[320 * 10 * D];
    for (size_t i = 0; i < BYTES; i++)
        host[i] = (unsigned char)(i * 7 + 3);
    SHOW("cuMemcpyHtoA_v2", F(cuMemcpyHtoA_v2)(array, 0, host, BYTES));
    memset(back, 0, sizeof(back));
    SHOW("cuMemcpyAtoH_v2 from an offset", F(cuMemcpyAtoH_v2)(back, array, 1024, 4096));
    printf("array bytes back from 1024: %s\n", memcmp(back, host + 1024, 4096) == 0 ? "match" : "differ");
    SHOW("cuMemcpyAtoD_v2", F(cuMemcpyAtoD_v2)(p.d, array, 0, BYTES));
    memset(back, 0, sizeof(back));
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(back, p.d, BYTES));
    printf("array to device: %s\n", memcmp(back, host, BYTES) == 0 ? "match" : "differ");
    /* 3D: a box of the padded host memory (pitch 320, 10 rows a layer) into the array. */
    for (size_t i = 0; i < sizeof(padded); i++)
        padded[i] = (unsigned char)(i * 13 + 1);
    CUDA_MEMCPY3D c = { .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = padded, .srcXInBytes = 32, .srcY = 1,
                        .srcPitch = 320, .srcHeight = 10, .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = array,
                        .WidthInBytes = ROW, .Height = H, .Depth = D };
    SHOW("cuMemcpy3D_v2 host to array", F(cuMemcpy3D_v2)(&c));
    /* The array into pitched device memory (512 bytes a row, 8 rows a layer), on a stream. */
    CUDA_MEMCPY3D a2d = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = array,
                          .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = p.d, .dstPitch = 512, .dstHeight = H,
                          .WidthInBytes = ROW, .Height = H, .Depth = D };
    SHOW("cuMemcpy3DAsync_v2 array to device", F(cuMemcpy3DAsync_v2)(&a2d, p.s));
    /* A box of it back: 64 bytes from x 16, 3 rows from y 1, 2 layers from z 1. */
    memset(back, 0, sizeof(back));
    CUDA_MEMCPY3D d2h = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = p.d, .srcXInBytes = 16, .srcY = 1,
                          .srcZ = 1, .srcPitch = 512, .srcHeight = H, .dstMemoryType = CU_MEMORYTYPE_HOST,
                          .dstHost = back, .dstPitch = 100, .dstHeight = 4, .WidthInBytes = 64, .Height = 3,
                          .Depth = 2 };
    SHOW("cuMemcpy3DAsync_v2 device to host", F(cuMemcpy3DAsync_v2)(&d2h, p.s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(p.s));
    printf("3D box weighs %llu\n", weighed(back, 100 * 4 * 2));
    /* On a stream: host to array and back. */
    SHOW("cuMemcpyHtoAAsync_v2", F(cuMemcpyHtoAAsync_v2)(array, 4096, host, 4096, p.s));
    memset(back, 0, sizeof(back));
    SHOW("cuMemcpyAtoHAsync_v2", F(cuMemcpyAtoHAsync_v2)(back, array, 0, BYTES, p.s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(p.s));
    printf("array after the asynchronous copy weighs %llu\n", weighed(back, BYTES));
    strict = 0;
    SHOW("cuMemcpyAtoH_v2 past the array", F(cuMemcpyAtoH_v2)(back, array, BYTES - 16, 64));
    c.dstLOD = 1;
    SHOW("cuMemcpy3D_v2 of a mipmap level", F(cuMemcpy3D_v2)(&c));
    strict = 1;
    SHOW("cuArrayDestroy", F(cuArrayDestroy)(array));
}

/* Texture and surface objects: over an array and over device memory, with
 * and without a view; their descriptors read back; one over more device
 * memory than the allocation holds refused. */
static void texture_and_surface_objects(void)
{
    CUDA_ARRAY_DESCRIPTOR ad = { 64, 16, CU_AD_FORMAT_FLOAT, 1 };
    CUarray array;
    SHOW("cuArrayCreate_v2", F(cuArrayCreate_v2)(&array, &ad));
    CUDA_RESOURCE_DESC res, back;
    memset(&res, 0, sizeof(res));
    res.resType = CU_RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = array;
    CUDA_TEXTURE_DESC tex;
    memset(&tex, 0, sizeof(tex));
    tex.addressMode[0] = tex.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
    tex.filterMode = CU_TR_FILTER_MODE_LINEAR;
    CUtexObject t1 = 0, t2 = 0;
    CUsurfObject s1 = 0;
    SHOW("cuTexObjectCreate over an array", F(cuTexObjectCreate)(&t1, &res, &tex, NULL));
    memset(&back, 0, sizeof(back));
    SHOW("cuTexObjectGetResourceDesc", F(cuTexObjectGetResourceDesc)(&back, t1));
    printf("texture resource type %d, its array %s\n", (int)back.resType,
           back.res.array.hArray == array ? "the same" : "another");
    CUDA_TEXTURE_DESC tex_back;
    SHOW("cuTexObjectGetTextureDesc", F(cuTexObjectGetTextureDesc)(&tex_back, t1));
    printf("texture filter %d, address modes %d %d\n", (int)tex_back.filterMode, (int)tex_back.addressMode[0],
           (int)tex_back.addressMode[1]);
    CUDA_RESOURCE_DESC lin;
    memset(&lin, 0, sizeof(lin));
    lin.resType = CU_RESOURCE_TYPE_LINEAR;
    lin.res.linear.devPtr = p.d;
    lin.res.linear.format = CU_AD_FORMAT_FLOAT;
    lin.res.linear.numChannels = 1;
    lin.res.linear.sizeInBytes = 4096;
    CUDA_RESOURCE_VIEW_DESC view;
    memset(&view, 0, sizeof(view));
    view.width = 1024;
    SHOW("cuTexObjectCreate over device memory", F(cuTexObjectCreate)(&t2, &lin, &tex, &view));
    CUDA_RESOURCE_VIEW_DESC view_back;
    memset(&view_back, 0, sizeof(view_back));
    SHOW("cuTexObjectGetResourceViewDesc", F(cuTexObjectGetResourceViewDesc)(&view_back, t2));
    printf("view width %zu\n", view_back.width);
    SHOW("cuSurfObjectCreate over an array", F(cuSurfObjectCreate)(&s1, &res));
    memset(&back, 0, sizeof(back));
    SHOW("cuSurfObjectGetResourceDesc", F(cuSurfObjectGetResourceDesc)(&back, s1));
    printf("surface resource type %d, its array %s\n", (int)back.resType,
           back.res.array.hArray == array ? "the same" : "another");
    strict = 0;
    CUtexObject t3 = 0;
    lin.res.linear.sizeInBytes = (size_t)N * sizeof(float) + 4096;
    SHOW("cuTexObjectCreate past the allocation", F(cuTexObjectCreate)(&t3, &lin, &tex, NULL));
    strict = 1;
    SHOW("cuSurfObjectDestroy", F(cuSurfObjectDestroy)(s1));
    SHOW("cuTexObjectDestroy", F(cuTexObjectDestroy)(t2));
    SHOW("cuTexObjectDestroy", F(cuTexObjectDestroy)(t1));
    SHOW("cuArrayDestroy", F(cuArrayDestroy)(array));
}

/* Virtual memory: a range reserved, an allocation made, mapped into it and
 * opened to the device, written and read through it, then undone. */
static void virtual_memory(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    SHOW("cuMemGetAllocationGranularity",
         F(cuMemGetAllocationGranularity)(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    printf("granularity %zu\n", gran);
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle mh = 0;
    CUmemAccessDesc access = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    unsigned mapped_word = 0;
    SHOW("cuMemAddressReserve", F(cuMemAddressReserve)(&va, 2 * gran, 0, 0, 0));
    SHOW("cuMemCreate", F(cuMemCreate)(&mh, 2 * gran, &prop, 0));
    SHOW("cuMemMap", F(cuMemMap)(va, 2 * gran, 0, mh, 0));
    SHOW("cuMemSetAccess", F(cuMemSetAccess)(va, 2 * gran, &access, 1));
    SHOW("cuMemsetD32_v2 mapped", F(cuMemsetD32_v2)(va, 0x1234, 4));
    SHOW("cuMemcpyDtoH_v2 mapped", F(cuMemcpyDtoH_v2)(&mapped_word, va + 4, sizeof(mapped_word)));
    printf("mapped word %x\n", mapped_word);
    SHOW("cuMemUnmap", F(cuMemUnmap)(va, 2 * gran));
    SHOW("cuMemRelease", F(cuMemRelease)(mh));
    SHOW("cuMemAddressFree", F(cuMemAddressFree)(va, 2 * gran));
    SHOW("cuMemAddressFree twice", (strict = 0, F(cuMemAddressFree)(va, 2 * gran)));
    strict = 1;
}

/* A graph's node array: counted, then filled (none: the room stays NULL). */
static void graph_nodes(void)
{
    CUgraph graph;
    CUgraphNode nodes[4] = { (CUgraphNode)1, (CUgraphNode)1, (CUgraphNode)1, (CUgraphNode)1 };
    size_t nnodes = 99;
    SHOW("cuGraphCreate", F(cuGraphCreate)(&graph, 0));
    SHOW("cuGraphGetNodes count", F(cuGraphGetNodes)(graph, NULL, &nnodes));
    printf("graph nodes %zu\n", nnodes);
    nnodes = 4;
    SHOW("cuGraphGetNodes", F(cuGraphGetNodes)(graph, nodes, &nnodes));
    printf("graph nodes %zu, first %s\n", nnodes,
           nodes[0] == NULL             ? "NULL"
           : nodes[0] == (CUgraphNode)1 ? "untouched"
                                        : "a node");
    SHOW("cuGraphDestroy", F(cuGraphDestroy)(graph));
}

static void everything_released(void)
{
    SHOW("cuEventDestroy_v2", F(cuEventDestroy_v2)(p.e0));
    SHOW("cuStreamDestroy_v2", F(cuStreamDestroy_v2)(p.s));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(p.d));
    SHOW("cuDevicePrimaryCtxRelease_v2", F(cuDevicePrimaryCtxRelease_v2)(p.dev));
    free(p.host);
}

static const struct {
    const char *name;
    void (*run)(void);
} paths_cases[] = {
    { "the driver", the_driver },
    { "functions by address", functions_by_address },
    { "the device", the_device },
    { "the current context", the_current_context },
    { "memory and a module", memory_and_a_module },
    { "JIT options", jit_options },
    { "modules from files", modules_from_files },
    { "JIT linking", jit_linking },
    { "contexts of every version", contexts_of_every_version },
    { "a device by its bus id", a_device_by_its_bus_id },
    { "a launch timed by events", a_launch_timed_by_events },
    { "parameters in one buffer", parameters_in_one_buffer },
    { "2D copies", copies_in_2d },
    { "tensor maps", tensor_maps },
    { "page-locked memory by its address", page_locked_memory_by_its_address },
    { "memory info and error strings", memory_info_and_error_strings },
    { "a staging buffer", a_staging_buffer },
    { "an array", an_array },
    { "arrays and 3D copies", arrays_and_3d_copies },
    { "texture and surface objects", texture_and_surface_objects },
    { "virtual memory", virtual_memory },
    { "graph nodes", graph_nodes },
    { "everything released", everything_released },
};

/* Each case's lines follow a line naming it. */
static int paths(const char *unused)
{
    (void)unused;
    for (size_t i = 0; i < sizeof(paths_cases) / sizeof(*paths_cases); i++) {
        current_case = paths_cases[i].name;
        printf("-- %s\n", current_case);
        paths_cases[i].run();
    }
    return 0;
}

/* Device 0's primary context, current (and returned): what each mode but
 * paths starts from. */
static CUcontext primary_context(void)
{
    CUdevice dev;
    CUcontext ctx;
    SHOW("cuInit", F(cuInit)(0));
    SHOW("cuDeviceGet", F(cuDeviceGet)(&dev, 0));
    SHOW("cuDevicePrimaryCtxRetain", F(cuDevicePrimaryCtxRetain)(&ctx, dev));
    SHOW("cuCtxSetCurrent", F(cuCtxSetCurrent)(ctx));
    return ctx;
}

/* The fake GPU's add_one, in a module loaded in the current context. */
static CUfunction add_one_kernel(void)
{
    CUmodule mod;
    CUfunction add_one;
    SHOW("cuModuleLoadData", F(cuModuleLoadData)(&mod, "fakegpu"));
    SHOW("cuModuleGetFunction", F(cuModuleGetFunction)(&add_one, mod, "add_one"));
    return add_one;
}

/* threads: each of 8 threads, at once, with its own stream and memory:
 * 100 rounds of a copy of its own pattern to the device (plain or page-
 * locked), a launch of add_one on it (asynchronous: its message and the
 * others' interleave on the connection), and the bytes back; wrong
 * elements counted. */
enum { THREADS = 8, ROUNDS = 100, ELEMS = 4096 };
static CUcontext threads_ctx;
static CUfunction threads_kernel;
static int threads_wrong[THREADS];

static void *one_thread(void *arg)
{
    int t = (int)(uintptr_t)arg, wrong = 0;
    CUstream s;
    CUdeviceptr d;
    float *pinned, plain[ELEMS];
    if (F(cuCtxSetCurrent)(threads_ctx) != CUDA_SUCCESS || F(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING) != 0 ||
        F(cuMemAlloc_v2)(&d, sizeof(plain)) != 0 || F(cuMemAllocHost_v2)((void **)&pinned, sizeof(plain)) != 0) {
        threads_wrong[t] = -1;
        return NULL;
    }
    int count = ELEMS;
    void *params[] = { &d, &count };
    for (int r = 0; r < ROUNDS; r++) {
        float *from = r % 2 ? pinned : plain;
        for (int i = 0; i < ELEMS; i++)
            from[i] = (float)(t * 1000 + r + i % 7);
        CUresult e =
            r % 2 ? F(cuMemcpyHtoDAsync_v2)(d, from, sizeof(plain), s) : F(cuMemcpyHtoD_v2)(d, from, sizeof(plain));
        e = e ? e : F(cuLaunchKernel)(threads_kernel, ELEMS / 256, 1, 1, 256, 1, 1, 0, s, params, NULL);
        e = e ? e : F(cuMemcpyDtoHAsync_v2)(from, d, sizeof(plain), s);
        e = e ? e : F(cuStreamSynchronize)(s);
        for (int i = 0; i < ELEMS; i++)
            wrong += e != CUDA_SUCCESS || from[i] != (float)(t * 1000 + r + i % 7) + 1;
    }
    F(cuMemFreeHost)(pinned);
    F(cuMemFree_v2)(d);
    F(cuStreamDestroy_v2)(s);
    threads_wrong[t] = wrong;
    return NULL;
}

static void threads(void)
{
    CUmodule mod;
    threads_ctx = primary_context();
    SHOW("cuModuleLoadData", F(cuModuleLoadData)(&mod, "fakegpu"));
    SHOW("cuModuleGetFunction", F(cuModuleGetFunction)(&threads_kernel, mod, "add_one"));
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, one_thread, (void *)(uintptr_t)t);
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        printf("thread %d: %d elements wrong in %d rounds\n", t, threads_wrong[t], ROUNDS);
    }
}

/* Waits for a line written to the FIFO at path; false when none came. */
static bool await_line(const char *path)
{
    char line[16];
    FILE *f = fopen(path, "r");
    bool got = f && fgets(line, sizeof(line), f);
    if (f)
        fclose(f);
    return got;
}

/* ---- the modes but paths ---- */

static int quota(const char *bytes)
{
    CUdeviceptr d;
    primary_context();
    strict = 0;
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d, strtoull(bytes, NULL, 0)));
    return 0;
}

/* Allocates BYTES, says so, and waits to be killed. */
static int hold(const char *bytes)
{
    CUdeviceptr d;
    primary_context();
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d, strtoull(bytes, NULL, 0)));
    printf("held\n");
    fflush(stdout);
    for (;;)
        pause();
}

static int images(const char *unused)
{
    (void)unused;
    /* The fake's image ("fakegpu", then text to its NUL): 256 KiB. */
    size_t n = 256 << 10;
    char *image = malloc(n);
    memset(image, 'x', n - 1);
    memcpy(image, "fakegpu ", 8);
    image[n - 1] = 0;
    primary_context();
    CUmodule mod, jitted;
    CUlibrary lib;
    CUfunction f;
    CUkernel k;
    SHOW("cuModuleLoadData", F(cuModuleLoadData)(&mod, image));
    SHOW("cuModuleGetFunction", F(cuModuleGetFunction)(&f, mod, "add_one"));
    SHOW("cuLibraryLoadData", F(cuLibraryLoadData)(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
    SHOW("cuLibraryGetKernel", F(cuLibraryGetKernel)(&k, lib, "add_one"));
    CUjit_option jit[1] = { CU_JIT_THREADS_PER_BLOCK };
    void *jit_values[1] = { (void *)(uintptr_t)256 };
    SHOW("cuModuleLoadDataEx", F(cuModuleLoadDataEx)(&jitted, image, 1, jit, jit_values));
    SHOW("cuModuleGetFunction", F(cuModuleGetFunction)(&f, jitted, "add_one"));
    free(image);
    return 0;
}

static int pinned_kept(const char *fifo)
{
    void *block;
    CUdeviceptr d;
    primary_context();
    SHOW("cuMemAllocHost_v2", F(cuMemAllocHost_v2)(&block, 1 << 20));
    memset(block, 'A', 1 << 20);
    printf("held\n");
    fflush(stdout);
    strict = 0;
    if (!await_line(fifo))
        return 1;
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d, 1 << 20));
    fflush(stdout);
    if (!await_line(fifo))
        return 1;
    size_t i = 0;
    while (i < (1u << 20) && ((char *)block)[i] == 'A')
        i++;
    printf("its page-locked bytes kept: %s\n", i == 1u << 20 ? "yes" : "no");
    return 0;
}

static int two_calls(const char *fifo)
{
    CUdeviceptr d;
    primary_context();
    strict = 0;
    if (!await_line(fifo))
        return 1;
    SHOW("second", F(cuMemAlloc_v2)(&d, 1 << 20));
    return 0;
}

/* pinned: page-locked blocks (shared with the executor where it is remote). */
enum { PINNED = 32 << 20 };
static struct {
    CUdeviceptr d;
    CUstream s;
    unsigned char *a, *b;
} pin;

/* Every byte crosses each way, plain and on a stream. */
static void pinned_copies(void)
{
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&pin.d, PINNED));
    SHOW("cuStreamCreate", F(cuStreamCreate)(&pin.s, 0));
    SHOW("cuMemAllocHost_v2", F(cuMemAllocHost_v2)((void **)&pin.a, PINNED));
    SHOW("cuMemHostAlloc", F(cuMemHostAlloc)((void **)&pin.b, PINNED, 0));
    for (size_t i = 0; i < PINNED; i++)
        pin.a[i] = (unsigned char)(i * 7 + i / 4096);
    SHOW("cuMemcpyHtoD_v2", F(cuMemcpyHtoD_v2)(pin.d, pin.a, PINNED));
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(pin.b, pin.d, PINNED));
    printf("plain copies %s\n", memcmp(pin.a, pin.b, PINNED) == 0 ? "match" : "differ");
    memset(pin.b, 0, PINNED);
    for (size_t i = 0; i < PINNED; i += 4096)
        pin.a[i] ^= 0xff;
    SHOW("cuMemcpyHtoDAsync_v2", F(cuMemcpyHtoDAsync_v2)(pin.d, pin.a, PINNED, pin.s));
    SHOW("cuMemcpyDtoHAsync_v2", F(cuMemcpyDtoHAsync_v2)(pin.b, pin.d + 4096, PINNED - 4096, pin.s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(pin.s));
    printf("asynchronous copies %s\n", memcmp(pin.a + 4096, pin.b, PINNED - 4096) == 0 ? "match" : "differ");
}

/* A child of fork writes its copy of a block: the parent's bytes, and what
 * its copies carry, stay the parent's. */
static void pinned_after_a_fork(void)
{
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        memset(pin.a, 0xee, PINNED);
        _exit(0);
    }
    int st = 0;
    waitpid(child, &st, 0);
    printf("the child's writes %s the parent's block\n", pin.a[PINNED - 1] == 0xee ? "reached" : "did not reach");
    SHOW("cuMemcpyHtoD_v2 after the fork", F(cuMemcpyHtoD_v2)(pin.d, pin.a, PINNED));
    SHOW("cuMemcpyDtoH_v2 after the fork", F(cuMemcpyDtoH_v2)(pin.b, pin.d, PINNED));
    printf("copies after the fork %s\n", memcmp(pin.a, pin.b, PINNED) == 0 ? "match" : "differ");
}

/* A mapped block's device view is its own address, which a kernel writes:
 * its bytes in the guest after the synchronize. */
static void pinned_mapped(void)
{
    float *m;
    CUdeviceptr view = 0;
    SHOW("cuMemHostAlloc mapped", F(cuMemHostAlloc)((void **)&m, 1024 * sizeof(float), CU_MEMHOSTALLOC_DEVICEMAP));
    SHOW("cuMemHostGetDevicePointer_v2", F(cuMemHostGetDevicePointer_v2)(&view, m, 0));
    printf("the mapped block's device view is its address: %s\n", view == (CUdeviceptr)(uintptr_t)m ? "yes" : "no");
    for (int i = 0; i < 1024; i++)
        m[i] = (float)i;
    CUfunction add_one = add_one_kernel();
    int count = 1024;
    void *params[] = { &view, &count };
    SHOW("cuLaunchKernel on the mapped block", F(cuLaunchKernel)(add_one, 4, 1, 1, 256, 1, 1, 0, pin.s, params, NULL));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(pin.s));
    int wrong = 0;
    for (int i = 0; i < 1024; i++)
        wrong += m[i] != (float)i + 1;
    printf("elements of the mapped block wrong after the kernel: %d\n", wrong);
    SHOW("cuMemFreeHost", F(cuMemFreeHost)(m));
    SHOW("cuMemFreeHost", F(cuMemFreeHost)(pin.a));
    SHOW("cuMemFreeHost", F(cuMemFreeHost)(pin.b));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(pin.d));
}

static int pinned(const char *unused)
{
    (void)unused;
    primary_context();
    pinned_copies();
    pinned_after_a_fork();
    pinned_mapped();
    return 0;
}

/* A launch the driver refuses (add_one over memory that is not there): said
 * at once by a local driver, by the next synchronize of a remote one, never
 * by a call that does not synchronize. */
static int late_error(const char *unused)
{
    (void)unused;
    primary_context();
    CUfunction add_one = add_one_kernel();
    strict = 0;
    CUdeviceptr nowhere = 0x10000;
    int count = 1024, n = 0;
    void *params[] = { &nowhere, &count };
    SHOW("cuLaunchKernel", F(cuLaunchKernel)(add_one, 4, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    SHOW("cuDeviceGetCount", F(cuDeviceGetCount)(&n));
    SHOW("cuCtxSynchronize", F(cuCtxSynchronize)());
    SHOW("cuCtxSynchronize again", F(cuCtxSynchronize)());
    return 0;
}

/* A device pointer that is none of the guest's allocations (it might be the
 * executor's own memory, through a unified address). */
static const CUdeviceptr elsewhere = 0x7f0000005000ull;

/* A JIT option that passes an array of the guest's pointers; a memset that
 * starts in the guest's allocation and runs far past it (the executor's
 * first refusal, which it logs with its length); handles of the executor's
 * own address space, never given to this process. */
static void forged_handles(void)
{
    CUjit_option symbols[1] = { CU_JIT_GLOBAL_SYMBOL_NAMES };
    void *symbol_values[1] = { NULL };
    CUmodule none;
    SHOW("cuModuleLoadDataEx with symbols", F(cuModuleLoadDataEx)(&none, "fakegpu", 1, symbols, symbol_values));
    CUdeviceptr small;
    SHOW("cuMemAlloc_v2 small", F(cuMemAlloc_v2)(&small, 4096));
    SHOW("cuMemsetD32_v2 past the allocation", F(cuMemsetD32_v2)(small, 0, 1u << 20));
    SHOW("cuStreamSynchronize forged", F(cuStreamSynchronize)((CUstream)(uintptr_t)0x7f0000001000ull));
    SHOW("cuCtxSetCurrent forged", F(cuCtxSetCurrent)((CUcontext)(uintptr_t)0x7f0000002000ull));
    SHOW("cuLaunchKernel forged",
         F(cuLaunchKernel)((CUfunction)(uintptr_t)0x7f0000003000ull, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
}

static void forged_pointers(void)
{
    unsigned word = 0;
    SHOW("cuMemsetD32_v2 forged pointer", F(cuMemsetD32_v2)(elsewhere, 0, 1));
    SHOW("cuMemcpyHtoD_v2 forged pointer", F(cuMemcpyHtoD_v2)(elsewhere, &word, sizeof(word)));
    SHOW("cuMemcpyDtoH_v2 forged pointer", F(cuMemcpyDtoH_v2)(&word, elsewhere, sizeof(word)));
    CUDA_MEMCPY2D forged2d = { .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                               .srcDevice = elsewhere,
                               .srcPitch = 64,
                               .dstMemoryType = CU_MEMORYTYPE_HOST,
                               .dstHost = &word,
                               .dstPitch = 4,
                               .WidthInBytes = 4,
                               .Height = 1 };
    SHOW("cuMemcpy2D_v2 forged pointer", F(cuMemcpy2D_v2)(&forged2d));
}

/* Copies between the guest and the device on a stream being captured: the
 * graph would read and write the executor's buffers at each launch, long
 * after they are freed. */
static void forged_captured_copies(void)
{
    CUstream cs;
    CUdeviceptr d = 0;
    unsigned words[4] = { 1, 2, 3, 4 };
    SHOW("cuStreamCreate", F(cuStreamCreate)(&cs, 0));
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d, sizeof(words)));
    SHOW("cuStreamBeginCapture_v2", F(cuStreamBeginCapture_v2)(cs, CU_STREAM_CAPTURE_MODE_RELAXED));
    SHOW("cuMemcpyDtoHAsync_v2 captured", F(cuMemcpyDtoHAsync_v2)(words, d, sizeof(words), cs));
    SHOW("cuMemcpyHtoDAsync_v2 captured", F(cuMemcpyHtoDAsync_v2)(d, words, sizeof(words), cs));
    CUgraph g = NULL;
    SHOW("cuStreamEndCapture", F(cuStreamEndCapture)(cs, &g));
    SHOW("cuCtxSynchronize after the captured copies", F(cuCtxSynchronize)());
}

/* An IPC handle of memory that is not the guest's, a call no guest may
 * make (a checkpoint of a host process), and a private table the guest
 * does not answer. */
static void forged_private_calls(void)
{
    CUipcMemHandle ipc;
    SHOW("cuIpcGetMemHandle forged pointer", F(cuIpcGetMemHandle)(&ipc, elsewhere));
    char args[64] = { 0 }; /* a CUcheckpointLockArgs */
    SHOW("cuCheckpointProcessLock", ((CUresult(*)(int, void *))sym("cuCheckpointProcessLock"))(1, args));
    void *table = NULL;
    CUuuid id = { { 0 } };
    SHOW("cuGetExportTable unknown", F(cuGetExportTable)((const void **)&table, &id));
}

static int forged(const char *unused)
{
    (void)unused;
    primary_context();
    strict = 0;
    forged_handles();
    forged_pointers();
    forged_captured_copies();
    forged_private_calls();
    return 0;
}

/* cuBLASLt's private table: function 4's two descriptions of the device (the
 * fake's are 66 bytes), function 13, and one of those not known. */
static int layout(const char *unused)
{
    (void)unused;
    static const CUuuid id = { { 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45, 0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd,
                                 0x8b, 0xca } };
    const void *const *table = NULL;
    primary_context();
    SHOW("cuGetExportTable cuBLASLt's", F(cuGetExportTable)((const void **)&table, &id));
    printf("table size %zu\n", (size_t)(uintptr_t)table[0]);
    for (int round = 0; round < 2; round++) {
        unsigned char *a = NULL, *b = NULL;
        SHOW("layout", ((CUresult(*)(void **, void **))table[4])((void **)&a, (void **)&b));
        for (int k = 0; k < 2; k++) {
            printf("layout %d:", k);
            for (int i = 0; i < 66; i++)
                printf(" %02x", (k ? b : a)[i]);
            printf("\n");
        }
        SHOW("layout freed", ((CUresult(*)(void *, void *))table[13])(a, b));
    }
    strict = 0;
    SHOW("function 1", ((CUresult(*)(void))table[1])());
    return 0;
}

static int maps(const char *unused)
{
    (void)unused;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    while (f && fgets(line, sizeof(line), f))
        if (strstr(line, "libcuda") || strstr(line, "libvgpu-cuda"))
            printf("%s", strrchr(line, ' ') + 1);
    if (f)
        fclose(f);
    return 0;
}

static int threads_mode(const char *unused)
{
    (void)unused;
    threads();
    return 0;
}

/* The modes; those with an argument take exactly one. */
static const struct {
    const char *name;
    bool takes_argument;
    int (*run)(const char *argument);
} modes[] = {
    { "paths", false, paths },
    { "quota", true, quota },
    { "hold", true, hold },
    { "images", false, images },
    { "pinned-kept", true, pinned_kept },
    { "two-calls", true, two_calls },
    { "threads", false, threads_mode },
    { "pinned", false, pinned },
    { "late-error", false, late_error },
    { "forged", false, forged },
    { "layout", false, layout },
    { "maps", false, maps },
};

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    driver = dlopen("libcuda.so.1", RTLD_NOW);
    if (!driver) {
        fprintf(stderr, "remote_client: %s\n", dlerror());
        return 1;
    }
    for (size_t i = 0; i < sizeof(modes) / sizeof(*modes); i++)
        if (strcmp(argv[1], modes[i].name) == 0 && (!modes[i].takes_argument || argc == 3)) {
            current_case = modes[i].name;
            return modes[i].run(argv[2]);
        }
    return 2;
}
