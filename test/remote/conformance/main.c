/*
 * conformance_client: every family of the driver API a guest carries,
 * called as a program calls it, each call's code and each result printed
 * (conformance.h).  A guest's output must be a local run's.
 *
 *   conformance_client [FAMILY...]   the families named, else all of them
 */
#define _GNU_SOURCE
#include "conformance.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void *driver;
const char *current_case = "";
int strict = 1;

void *sym(const char *name)
{
    void *p = dlsym(driver, name);
    if (!p) {
        fprintf(stderr, "conformance_client: %s missing\n", name);
        exit(1);
    }
    return p;
}

void conformance_failed(const char *what)
{
    fflush(stdout);
    fprintf(stderr, "conformance_client: %s: %s failed\n", current_case, what);
    exit(1);
}

CUfunction conformance_kernel(const char *name)
{
    static CUmodule mod; /* loaded at the first kernel asked for */
    if (!mod)
        SHOW("cuModuleLoadData", F(cuModuleLoadData)(&mod, "fakegpu"));
    CUfunction f = NULL;
    SHOW("cuModuleGetFunction", F(cuModuleGetFunction)(&f, mod, name));
    return f;
}

static const struct {
    const char *name;
    void (*run)(void);
} families[] = {
    { "legacy", conformance_legacy },   { "streams", conformance_streams }, { "memory", conformance_memory },
    { "queries", conformance_queries }, { "graphs", conformance_graphs },   { "threads", conformance_threads },
};

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    driver = dlopen("libcuda.so.1", RTLD_NOW);
    if (!driver) {
        fprintf(stderr, "conformance_client: %s\n", dlerror());
        return 1;
    }
    CUdevice dev;
    CUcontext ctx;
    current_case = "setup";
    SHOW("cuInit", F(cuInit)(0));
    SHOW("cuDeviceGet", F(cuDeviceGet)(&dev, 0));
    SHOW("cuDevicePrimaryCtxRetain", F(cuDevicePrimaryCtxRetain)(&ctx, dev));
    SHOW("cuCtxSetCurrent", F(cuCtxSetCurrent)(ctx));
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        bool named = argc < 2;
        for (int a = 1; a < argc; a++)
            named = named || strcmp(argv[a], families[i].name) == 0;
        if (!named)
            continue;
        current_case = families[i].name;
        printf("-- %s\n", families[i].name);
        families[i].run();
    }
    SHOW("cuCtxSynchronize", F(cuCtxSynchronize)());
    return 0;
}
