/* A library that opens the driver itself, loaded with RTLD_DEEPBIND or into
 * a namespace of its own (namespaces.c): its own references to dlopen are
 * what such a load binds differently. */
#define _GNU_SOURCE
#include "test/loadorder/probe.h"

/* Opens lib, makes a context on device 0 and allocates bytes there; the
 * allocation's result, or -1 where lib cannot be used.  Says which library
 * answered, and what device 0's total memory is, in where. */
__attribute__((visibility("default"))) int deep_alloc(const char *lib, size_t bytes, char *where, size_t len);
__attribute__((visibility("default"))) int deep_alloc(const char *lib, size_t bytes, char *where, size_t len)
{
    void *h = dlopen(lib, RTLD_NOW);
    struct probe_cuda f = h ? probe_cuda_from(h) : (struct probe_cuda){ 0 };
    if (!f.init || !f.alloc) {
        snprintf(where, len, "dlopen(%s): %s", lib, h ? "no cuInit" : dlerror());
        return -1;
    }
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    size_t total = 0;
    char from[PATH_MAX];
    if (f.init(0) || f.get(&dev, 0) || f.total(&total, dev) || f.retain(&ctx, dev) || f.set_current(ctx)) {
        snprintf(where, len, "%s: no device", probe_library_of((const void *)f.init, from, sizeof(from)));
        return -1;
    }
    snprintf(where, len, "%s, device 0 of %zu bytes", probe_library_of((const void *)f.init, from, sizeof(from)),
             total);
    CUresult r = f.alloc(&p, bytes);
    if (r == CUDA_SUCCESS)
        f.free(p);
    return (int)r;
}
