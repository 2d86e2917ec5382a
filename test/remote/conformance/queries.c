/*
 * What a program asks of the driver: functions' and kernels' names, a
 * module's and a library's enumerated (a kernel found so launched),
 * symbols a module or library does not have, occupancy (block sizes, with
 * and without a function of the block size for its shared memory,
 * clusters), a device's limits, atomics with the host, LUID and SM
 * resources, and the driver's logs.
 */
#include "conformance.h"

#include <string.h>

static void names(void)
{
    CUfunction add_one = conformance_kernel("add_one");
    const char *name = NULL;
    SHOW("cuFuncGetName", F(cuFuncGetName)(&name, add_one));
    printf("add_one's name: %s\n", name ? name : "(none)");
    TRY("cuFuncGetName of no function", F(cuFuncGetName)(&name, NULL));
    CUmodule mod = NULL;
    unsigned count = 0;
    SHOW("cuModuleLoadData", F(cuModuleLoadData)(&mod, "fakegpu"));
    SHOW("cuModuleGetFunctionCount", F(cuModuleGetFunctionCount)(&count, mod));
    printf("functions in the module: %u\n", count);
    CUfunction fs[16] = { NULL };
    if (count > 16)
        count = 16;
    SHOW("cuModuleEnumerateFunctions", F(cuModuleEnumerateFunctions)(fs, count, mod));
    for (unsigned i = 0; i < count; i++) {
        name = NULL;
        SHOW("cuFuncGetName", F(cuFuncGetName)(&name, fs[i]));
        printf("function %u: %s\n", i, name ? name : "(none)");
    }
    CUtexref tex = NULL;
    TRY("cuModuleGetTexRef of no such texture", F(cuModuleGetTexRef)(&tex, mod, "tex"));
    SHOW("cuModuleUnload", F(cuModuleUnload)(mod));
    TRY("cuModuleGetFunctionCount of the module unloaded", F(cuModuleGetFunctionCount)(&count, mod));
}

/* A library's kernels, enumerated by name; fill_u32 among them launched.
 * The library stays loaded: its kernels are the module's functions in
 * the fake driver, which later families launch. */
static void library(void)
{
    CUlibrary lib = NULL;
    unsigned count = 0;
    SHOW("cuLibraryLoadData", F(cuLibraryLoadData)(&lib, "fakegpu", NULL, NULL, 0, NULL, NULL, 0));
    SHOW("cuLibraryGetKernelCount", F(cuLibraryGetKernelCount)(&count, lib));
    printf("kernels in the library: %u\n", count);
    CUkernel ks[16] = { NULL };
    if (count > 16)
        count = 16;
    SHOW("cuLibraryEnumerateKernels", F(cuLibraryEnumerateKernels)(ks, count, lib));
    CUkernel fill = NULL;
    for (unsigned i = 0; i < count; i++) {
        const char *name = NULL;
        SHOW("cuKernelGetName", F(cuKernelGetName)(&name, ks[i]));
        printf("kernel %u: %s\n", i, name ? name : "(none)");
        if (name && strcmp(name, "fill_u32") == 0)
            fill = ks[i];
    }
    printf("fill_u32 enumerated: %s\n", fill ? "yes" : "no");
    enum { N = 32 };
    CUdeviceptr d = 0;
    unsigned value = 0x5a5a0001u, out[N];
    int n = N;
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d, sizeof(out)));
    SHOW("cuMemsetD32_v2", F(cuMemsetD32_v2)(d, 0, N));
    void *params[] = { &d, &value, &n };
    SHOW("cuLaunchKernel of the enumerated kernel",
         F(cuLaunchKernel)((CUfunction)(void *)fill, 1, 1, 1, N, 1, 1, 0, NULL, params, NULL));
    SHOW("cuCtxSynchronize", F(cuCtxSynchronize)());
    memset(out, 0, sizeof(out));
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(out, d, sizeof(out)));
    int right = 0;
    for (int i = 0; i < N; i++)
        right += out[i] == value;
    printf("elements the enumerated kernel filled: %d of %d\n", right, N);
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(d));
    CUdeviceptr managed = 0;
    size_t bytes = 0;
    TRY("cuLibraryGetManaged of no such variable", F(cuLibraryGetManaged)(&managed, &bytes, lib, "counter"));
}

/* Dynamic shared memory of 64 bytes a thread. */
static size_t shared_of(int block)
{
    return 64 * (size_t)block;
}

static void occupancy(void)
{
    CUfunction add_one = conformance_kernel("add_one");
    int grid = -1, block = -1;
    SHOW("cuOccupancyMaxPotentialBlockSize", F(cuOccupancyMaxPotentialBlockSize)(&grid, &block, add_one, NULL, 0, 0));
    printf("potential block size %d, its least grid %d\n", block, grid);
    grid = block = -1;
    SHOW("cuOccupancyMaxPotentialBlockSize with shared memory a thread",
         F(cuOccupancyMaxPotentialBlockSize)(&grid, &block, add_one, shared_of, 0, 0));
    printf("potential block size with shared memory %d, its least grid %d\n", block, grid);
    grid = block = -1;
    SHOW("cuOccupancyMaxPotentialBlockSize under a limit of 100",
         F(cuOccupancyMaxPotentialBlockSize)(&grid, &block, add_one, shared_of, 0, 100));
    printf("potential block size under 100 %d, its least grid %d\n", block, grid);
    grid = block = -1;
    SHOW("cuOccupancyMaxPotentialBlockSize with 40 KiB a block",
         F(cuOccupancyMaxPotentialBlockSize)(&grid, &block, add_one, NULL, 40 << 10, 0));
    printf("potential block size with 40 KiB %d, its least grid %d\n", block, grid);
    grid = block = -1;
    SHOW("cuOccupancyMaxPotentialBlockSizeWithFlags",
         F(cuOccupancyMaxPotentialBlockSizeWithFlags)(&grid, &block, add_one, shared_of, 0, 0,
                                                      CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
    printf("potential block size with flags %d, its least grid %d\n", block, grid);
    TRY("cuOccupancyMaxPotentialBlockSizeWithFlags of no such flag",
        F(cuOccupancyMaxPotentialBlockSizeWithFlags)(&grid, &block, add_one, NULL, 0, 0, 4));
    CUlaunchConfig config;
    memset(&config, 0, sizeof(config));
    config.gridDimX = 16;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 128;
    config.blockDimY = config.blockDimZ = 1;
    int cluster = -1;
    SHOW("cuOccupancyMaxPotentialClusterSize", F(cuOccupancyMaxPotentialClusterSize)(&cluster, add_one, &config));
    printf("potential cluster size %d\n", cluster);
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof(attr));
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = 2;
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    config.attrs = &attr;
    config.numAttrs = 1;
    int clusters = -1;
    SHOW("cuOccupancyMaxActiveClusters", F(cuOccupancyMaxActiveClusters)(&clusters, add_one, &config));
    printf("active clusters of 2 blocks of 128 threads %d\n", clusters);
}

static void device_limits(void)
{
    size_t width = 0;
    SHOW("cuDeviceGetTexture1DLinearMaxWidth", F(cuDeviceGetTexture1DLinearMaxWidth)(&width, CU_AD_FORMAT_FLOAT, 4, 0));
    printf("1D linear texture of float4 at most %zu elements\n", width);
    TRY("cuDeviceGetTexture1DLinearMaxWidth of 3 channels",
        F(cuDeviceGetTexture1DLinearMaxWidth)(&width, CU_AD_FORMAT_FLOAT, 3, 0));
    CUatomicOperation ops[CU_ATOMIC_OPERATION_MAX];
    unsigned caps[CU_ATOMIC_OPERATION_MAX];
    for (int i = 0; i < CU_ATOMIC_OPERATION_MAX; i++) {
        ops[i] = (CUatomicOperation)(CU_ATOMIC_OPERATION_MAX - 1 - i); /* backwards: each answer in its place */
        caps[i] = 0xffffffffu;
    }
    SHOW("cuDeviceGetHostAtomicCapabilities",
         F(cuDeviceGetHostAtomicCapabilities)(caps, ops, CU_ATOMIC_OPERATION_MAX, 0));
    printf("host atomics:");
    for (int i = 0; i < CU_ATOMIC_OPERATION_MAX; i++)
        printf(" %d:%#x", (int)ops[i], caps[i]);
    printf("\n");
    ops[0] = CU_ATOMIC_OPERATION_MAX;
    TRY("cuDeviceGetHostAtomicCapabilities of no such operation",
        F(cuDeviceGetHostAtomicCapabilities)(caps, ops, 1, 0));
    char luid[8];
    unsigned mask = 0;
    TRY("cuDeviceGetLuid", F(cuDeviceGetLuid)(luid, &mask, 0));
}

static void resources(void)
{
    CUdevResource sms, rest, groups[16];
    memset(&sms, 0, sizeof(sms));
    SHOW("cuDeviceGetDevResource", F(cuDeviceGetDevResource)(0, &sms, CU_DEV_RESOURCE_TYPE_SM));
    printf("device 0's SMs: type %d, %u of them, partitions of %u at least, aligned to %u\n", (int)sms.type,
           sms.sm.smCount, sms.sm.minSmPartitionSize, sms.sm.smCoscheduledAlignment);
    unsigned n = 0;
    memset(&rest, 0, sizeof(rest));
    SHOW("cuDevSmResourceSplitByCount counted", F(cuDevSmResourceSplitByCount)(NULL, &n, &sms, &rest, 0, 16));
    printf("groups of 16 SMs there would be: %u (%u SMs left)\n", n, rest.sm.smCount);
    if (n > 16)
        n = 16;
    memset(groups, 0, sizeof(groups));
    memset(&rest, 0, sizeof(rest));
    SHOW("cuDevSmResourceSplitByCount", F(cuDevSmResourceSplitByCount)(groups, &n, &sms, &rest, 0, 16));
    printf("groups made: %u:", n);
    for (unsigned i = 0; i < n && i < 16; i++)
        printf(" %u", groups[i].sm.smCount);
    printf(" (%u SMs left, type %d)\n", rest.sm.smCount, (int)rest.type);
    n = 3;
    SHOW("cuDevSmResourceSplitByCount into room for 3 ignoring co-scheduling",
         F(cuDevSmResourceSplitByCount)(groups, &n, &sms, &rest, CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, 5));
    printf("groups made: %u of %u SMs (%u SMs left)\n", n, groups[0].sm.smCount, rest.sm.smCount);
    TRY("cuDeviceGetDevResource of no such type", F(cuDeviceGetDevResource)(0, &sms, CU_DEV_RESOURCE_TYPE_INVALID));
}

/* The lines the driver logged for two symbols not found. */
static void logs(void)
{
    CUlogIterator it = 0, before = 0;
    SHOW("cuLogsCurrent", F(cuLogsCurrent)(&it, 0));
    before = it;
    CUmodule mod = NULL;
    CUtexref tex = NULL;
    CUdeviceptr_v1 global = 0;
    unsigned bytes = 0;
    SHOW("cuModuleLoadData", F(cuModuleLoadData)(&mod, "fakegpu"));
    TRY("cuModuleGetTexRef of no such texture", F(cuModuleGetTexRef)(&tex, mod, "shadow_map"));
    TRY("cuModuleGetGlobal of no such global", F(cuModuleGetGlobal)(&global, &bytes, mod, "counter"));
    char buffer[4096];
    size_t size = 16;
    TRY("cuLogsDumpToMemory into 16 bytes", F(cuLogsDumpToMemory)(&it, buffer, &size, 0));
    printf("logs into 16 bytes: %zu bytes, the iterator %u lines on\n", size, it - before);
    size = sizeof(buffer);
    memset(buffer, 'x', sizeof(buffer));
    SHOW("cuLogsDumpToMemory", F(cuLogsDumpToMemory)(&it, buffer, &size, 0));
    printf("logs since: %zu bytes, the iterator %u lines on\n", size, it - before);
    fwrite(buffer, 1, strnlen(buffer, sizeof(buffer)), stdout);
    size = sizeof(buffer);
    SHOW("cuLogsDumpToMemory again", F(cuLogsDumpToMemory)(&it, buffer, &size, 0));
    printf("logs since the dump: %zu bytes, NUL first: %s\n", size, buffer[0] == 0 ? "yes" : "no");
    size = sizeof(buffer);
    SHOW("cuLogsDumpToMemory of every line", F(cuLogsDumpToMemory)(NULL, buffer, &size, 0));
    printf("every line of the logs, %zu bytes:\n", size);
    fwrite(buffer, 1, strnlen(buffer, sizeof(buffer)), stdout);
    SHOW("cuModuleUnload", F(cuModuleUnload)(mod));
}

void conformance_queries(void)
{
    names();
    library();
    occupancy();
    device_limits();
    resources();
    logs();
}
