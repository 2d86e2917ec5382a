/*
 * An admitted process over its vGPU's quota, for test/gpu/mediator/watch.sh: its
 * module declares GIB GiB of __device__ arrays, which the driver allocates
 * when it loads the module and which vgpu does not count (docs/design/memory.md,
 * "What is counted").  It starts through libcuda.so.1 (vgpu, when
 * preloaded: admitted, 256 MiB counted), loads a PTX module of GIB arrays
 * of 1 GiB, and waits to be killed; only the mediator's watch, which reads
 * what the driver counts for the process, sees the arrays.
 *
 *   gcc -o global_alloc global_alloc.c -ldl      (watch.sh builds it)
 *   global_alloc GIB   prints "ready PID" once the module is loaded
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef unsigned long long CUdeviceptr;

#define SYM(h, name, type) ((type)dlsym(h, name))

int main(int argc, char **argv)
{
    int gib = argc == 2 ? atoi(argv[1]) : 0;
    if (gib < 1 || gib > 64) {
        fprintf(stderr, "usage: global_alloc GIB (1 to 64)\n");
        return 2;
    }
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "global_alloc: %s\n", dlerror());
        return 2;
    }
    CUresult (*init)(unsigned) = SYM(h, "cuInit", CUresult(*)(unsigned));
    CUresult (*device)(CUdevice *, int) = SYM(h, "cuDeviceGet", CUresult(*)(CUdevice *, int));
    CUresult (*retain)(CUcontext *, CUdevice) = SYM(h, "cuDevicePrimaryCtxRetain", CUresult(*)(CUcontext *, CUdevice));
    CUresult (*current)(CUcontext) = SYM(h, "cuCtxSetCurrent", CUresult(*)(CUcontext));
    CUresult (*alloc)(CUdeviceptr *, size_t) = SYM(h, "cuMemAlloc_v2", CUresult(*)(CUdeviceptr *, size_t));
    CUresult (*load)(CUmodule *, const void *) = SYM(h, "cuModuleLoadData", CUresult(*)(CUmodule *, const void *));
    CUresult (*global)(CUdeviceptr *, size_t *, CUmodule, const char *) =
        SYM(h, "cuModuleGetGlobal_v2", CUresult(*)(CUdeviceptr *, size_t *, CUmodule, const char *));
    if (!init || !device || !retain || !current || !alloc || !load || !global) {
        fprintf(stderr, "global_alloc: libcuda.so.1 lacks a CUDA entry point\n");
        return 2;
    }
    /* The module: GIB arrays of 1 GiB each (.global, zero-filled). */
    size_t len = 128 + (size_t)gib * 64;
    char *ptx = malloc(len);
    int n = snprintf(ptx, len, ".version 8.0\n.target sm_52\n.address_size 64\n");
    for (int i = 0; i < gib; i++)
        n += snprintf(ptx + n, len - (size_t)n, ".visible .global .align 8 .b8 big%d[1073741824];\n", i);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p, g;
    CUmodule mod;
    size_t size = 0;
    CUresult r;
    if ((r = init(0)) || (r = device(&dev, 0)) || (r = retain(&ctx, dev)) || (r = current(ctx)) ||
        (r = alloc(&p, 256ull << 20)) || (r = load(&mod, ptx)) || (r = global(&g, &size, mod, "big0"))) {
        fprintf(stderr, "global_alloc: CUDA error %d\n", r);
        return 2;
    }
    printf("ready %d (a module of %d x %zu MiB of globals)\n", (int)getpid(), gib, size >> 20);
    fflush(stdout);
    for (;;)
        pause();
}
