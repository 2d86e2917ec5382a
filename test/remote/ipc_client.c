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
 * Then the same for a virtual memory allocation by a shareable handle
 * (cuMemExportToShareableHandle, a POSIX file descriptor the giver passes
 * to the taker over DIR/fd.sock, cuMemImportFromShareableHandle), as NCCL
 * and expandable segments share memory: 0x33 from the giver, 0x44 over
 * the second page from the taker.
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
#include <sys/socket.h>
#include <sys/un.h>
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


/* ---- a virtual memory allocation shared by a POSIX file descriptor ---- */

enum { GRANULE = 2 << 20 };

/* A socket at DIR/fd.sock: listening (the giver's), or connected (the taker's). */
static int fd_socket(const char *dir, bool listening)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    path(a.sun_path, sizeof(a.sun_path), dir, "fd.sock");
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && listening && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(s, 1) == 0)
        return s;
    for (int i = 0; s >= 0 && !listening && i < 1000; i++, usleep(10000))
        if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
            return s;
    fprintf(stderr, "ipc_client: no socket %s\n", a.sun_path);
    exit(1);
}

static void send_fd(int s, int fd)
{
    char byte = 0, space[CMSG_SPACE(sizeof(int))] = { 0 };
    struct iovec v = { &byte, 1 };
    struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = space, .msg_controllen = sizeof(space) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    if (sendmsg(s, &m, 0) != 1) {
        perror("ipc_client: sendmsg");
        exit(1);
    }
}

static int receive_fd(int s)
{
    char byte, space[CMSG_SPACE(sizeof(int))];
    struct iovec v = { &byte, 1 };
    struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = space, .msg_controllen = sizeof(space) };
    struct cmsghdr *c;
    int fd = -1;
    if (recvmsg(s, &m, 0) == 1 && (c = CMSG_FIRSTHDR(&m)) && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
    if (fd < 0) {
        fprintf(stderr, "ipc_client: no descriptor came\n");
        exit(1);
    }
    return fd;
}

/* GRANULE bytes of device 0, able to be shared by a descriptor, mapped at
 * a range reserved for them (*at) and readable and writable there. */
static void mapped(CUmemGenericAllocationHandle h, CUdeviceptr *at)
{
    CUmemAccessDesc rw = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
                           .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    SHOW("cuMemAddressReserve", F(cuMemAddressReserve)(at, GRANULE, 0, 0, 0));
    SHOW("cuMemMap", F(cuMemMap)(*at, GRANULE, 0, h, 0));
    SHOW("cuMemSetAccess", F(cuMemSetAccess)(*at, GRANULE, &rw, 1));
}

static void unmapped(CUmemGenericAllocationHandle h, CUdeviceptr at)
{
    SHOW("cuMemUnmap", F(cuMemUnmap)(at, GRANULE));
    SHOW("cuMemAddressFree", F(cuMemAddressFree)(at, GRANULE));
    SHOW("cuMemRelease", F(cuMemRelease)(h));
}

static unsigned char byte_at(CUdeviceptr p)
{
    unsigned char b = 0;
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(&b, p, 1));
    return b;
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
    int listening = fd_socket(dir, true);
    put(dir, "event", &eh, sizeof(eh));
    put(dir, "mem", &mh, sizeof(mh));

    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
    CUmemGenericAllocationHandle vh;
    CUdeviceptr va;
    SHOW("cuMemCreate", F(cuMemCreate)(&vh, GRANULE, &prop, 0));
    mapped(vh, &va);
    SHOW("cuMemsetD8_v2", F(cuMemsetD8_v2)(va, 0x33, GRANULE));
    SHOW("cuCtxSynchronize", F(cuCtxSynchronize)());
    int fd = -1;
    SHOW("cuMemExportToShareableHandle",
         F(cuMemExportToShareableHandle)(&fd, vh, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    printf("the giver's descriptor is one: %s\n", fd >= 0 ? "yes" : "no");
    int s = accept(listening, NULL, NULL);
    send_fd(s, fd);
    close(fd);
    close(s);
    close(listening);
    await(dir, "done", NULL, 0);
    printf("the giver's shared allocation's second page holds %#x (the taker's write)\n", byte_at(va + PAGE));
    unmapped(vh, va);
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

    CUmemGenericAllocationHandle none;
    show("cuMemImportFromShareableHandle of a descriptor that is none",
         F(cuMemImportFromShareableHandle)(&none, (void *)(intptr_t)987, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
         CUDA_ERROR_INVALID_VALUE);
    int s = fd_socket(dir, false);
    int fd = receive_fd(s);
    close(s);
    CUmemGenericAllocationHandle vh;
    CUdeviceptr va;
    SHOW("cuMemImportFromShareableHandle",
         F(cuMemImportFromShareableHandle)(&vh, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    mapped(vh, &va);
    printf("the taker sees the giver's shared allocation: %#x %#x\n", byte_at(va), byte_at(va + GRANULE - 1));
    SHOW("cuMemsetD8_v2", F(cuMemsetD8_v2)(va + PAGE, 0x44, PAGE));
    SHOW("cuCtxSynchronize", F(cuCtxSynchronize)());
    unmapped(vh, va);
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
