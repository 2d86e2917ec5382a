/*
 * Two processes of one host sharing device memory and an event by IPC
 * handles (cuIpc*), as torch.multiprocessing and serving engines do: run
 * natively, or as two guests, each through an executor of its own.
 *
 *   ipc_client give DIR   allocates 1 MiB filled with 0x11, writes its IPC
 *                         handle to DIR/mem and an interprocess event's to
 *                         DIR/event, tries to open its own handle, waits for
 *                         DIR/done, then says whether the taker's writes
 *                         reached its memory
 *   ipc_client take DIR   opens both handles, reads the giver's bytes,
 *                         writes 0x22 over the second page, closes them,
 *                         and makes DIR/done
 *
 * Prints "CALL: CODE" lines and what it saw; the outputs of a native run
 * and a remote one must be the same.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
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
        fprintf(stderr, "ipc_client: %s missing\n", name);
        exit(1);
    }
    return p;
}

/* Prints a call's code; a failure other than one expected ends the run. */
static CUresult show(const char *what, CUresult r, CUresult expected)
{
    printf("%s: %d\n", what, (int)r);
    fflush(stdout);
    if (r != expected) {
        fprintf(stderr, "ipc_client: %s returned %d\n", what, (int)r);
        exit(1);
    }
    return r;
}
#define SHOW(what, call) show(what, (call), CUDA_SUCCESS)

enum { BYTES = 1 << 20, PAGE = 4096 };

static void context(void)
{
    CUcontext ctx;
    SHOW("cuInit", F(cuInit)(0));
    SHOW("cuDevicePrimaryCtxRetain", F(cuDevicePrimaryCtxRetain)(&ctx, 0));
    SHOW("cuCtxSetCurrent", F(cuCtxSetCurrent)(ctx));
}

static void path(char *out, size_t len, const char *dir, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

static void put(const char *dir, const char *name, const void *bytes, size_t n)
{
    char p[4096], tmp[4200];
    path(p, sizeof(p), dir, name);
    snprintf(tmp, sizeof(tmp), "%s.part", p);
    FILE *f = fopen(tmp, "w");
    if (!f || fwrite(bytes, 1, n, f) != n || fclose(f) != 0 || rename(tmp, p) != 0) {
        fprintf(stderr, "ipc_client: cannot write %s\n", p);
        exit(1);
    }
}

/* Waits (10 s at most) for DIR/name; reads n bytes of it where bytes. */
static void await(const char *dir, const char *name, void *bytes, size_t n)
{
    char p[4096];
    path(p, sizeof(p), dir, name);
    for (int i = 0; i < 1000; i++) {
        FILE *f = fopen(p, "r");
        if (f) {
            size_t got = bytes ? fread(bytes, 1, n, f) : 0;
            fclose(f);
            if (got == n || !bytes)
                return;
        }
        usleep(10000);
    }
    fprintf(stderr, "ipc_client: no %s within 10 s\n", p);
    exit(1);
}

static int give(const char *dir)
{
    context();
    CUdeviceptr d;
    CUevent e;
    CUipcMemHandle mh;
    CUipcEventHandle eh;
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d, BYTES));
    SHOW("cuMemsetD8_v2", F(cuMemsetD8_v2)(d, 0x11, BYTES));
    SHOW("cuIpcGetMemHandle", F(cuIpcGetMemHandle)(&mh, d));
    show("cuIpcGetMemHandle of a pointer inside it", F(cuIpcGetMemHandle)(&mh, d + PAGE), CUDA_ERROR_INVALID_VALUE);
    SHOW("cuIpcGetMemHandle", F(cuIpcGetMemHandle)(&mh, d));
    SHOW("cuEventCreate", F(cuEventCreate)(&e, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS));
    SHOW("cuIpcGetEventHandle", F(cuIpcGetEventHandle)(&eh, e));
    SHOW("cuEventRecord", F(cuEventRecord)(e, 0));
    CUdeviceptr own = 0;
    show("cuIpcOpenMemHandle_v2 of its own handle", F(cuIpcOpenMemHandle_v2)(&own, mh, 0),
         CUDA_ERROR_INVALID_CONTEXT);
    put(dir, "event", &eh, sizeof(eh));
    put(dir, "mem", &mh, sizeof(mh));
    await(dir, "done", NULL, 0);
    unsigned char first = 0, second = 0;
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(&first, d, 1));
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(&second, d + PAGE, 1));
    printf("the giver's first page holds %#x, its second %#x (the taker's write)\n", first, second);
    SHOW("cuEventDestroy_v2", F(cuEventDestroy_v2)(e));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(d));
    return 0;
}

static int take(const char *dir)
{
    context();
    CUipcMemHandle mh;
    CUipcEventHandle eh;
    await(dir, "mem", &mh, sizeof(mh));
    await(dir, "event", &eh, sizeof(eh));
    CUdeviceptr d = 0;
    CUevent e;
    CUipcMemHandle forged;
    memset(&forged, 0x5a, sizeof(forged));
    show("cuIpcOpenMemHandle_v2 of a forged handle", F(cuIpcOpenMemHandle_v2)(&d, forged, 0),
         CUDA_ERROR_INVALID_VALUE);
    SHOW("cuIpcOpenMemHandle_v2", F(cuIpcOpenMemHandle_v2)(&d, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    unsigned char seen[BYTES];
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(seen, d, BYTES));
    size_t same = 0;
    while (same < BYTES && seen[same] == 0x11)
        same++;
    printf("the taker sees the giver's bytes: %s\n", same == BYTES ? "all" : "not all");
    SHOW("cuMemsetD8_v2", F(cuMemsetD8_v2)(d + PAGE, 0x22, PAGE));
    SHOW("cuCtxSynchronize", F(cuCtxSynchronize)());
    SHOW("cuIpcOpenEventHandle", F(cuIpcOpenEventHandle)(&e, eh));
    SHOW("cuStreamWaitEvent", F(cuStreamWaitEvent)(0, e, 0));
    SHOW("cuEventSynchronize", F(cuEventSynchronize)(e));
    SHOW("cuEventDestroy_v2", F(cuEventDestroy_v2)(e));
    SHOW("cuIpcCloseMemHandle", F(cuIpcCloseMemHandle)(d));
    show("cuIpcCloseMemHandle again", F(cuIpcCloseMemHandle)(d), CUDA_ERROR_INVALID_VALUE);
    put(dir, "done", "", 0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "give") != 0 && strcmp(argv[1], "take") != 0)) {
        fprintf(stderr, "usage: ipc_client give|take DIR\n");
        return 2;
    }
    driver = dlopen("libcuda.so.1", RTLD_NOW);
    if (!driver) {
        fprintf(stderr, "ipc_client: %s\n", dlerror());
        return 1;
    }
    return strcmp(argv[1], "give") == 0 ? give(argv[2]) : take(argv[2]);
}
