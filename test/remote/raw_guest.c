/*
 * A guest that speaks the remote driver's protocol by hand (wire.h), over
 * the executor's socket, to put what no guest library sends to the
 * executor: driver settings it may not give, and shared page-locked
 * memory (SHARE, UNSHARE, copies flagged VGPU_REMOTE_SHARED) forged every
 * way, module images named by hashes the executor never made, and images
 * whose words a driver would follow as addresses (fatbin wrappers), and a
 * lane broken while another waits for a call it never sent.  Prints "what: code" a line; the
 * executor must refuse each forgery and serve on, or close the connection
 * where the protocol says so.
 *
 *   raw_guest SOCKET
 */
#define _GNU_SOURCE
#include "forwarder/remote/transport/sha256.h"
#include "forwarder/remote/transport/wire.h"

#include "vgpu_cuda_slots.h"
#include "vgpu_remote_cuda.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name
#define MiB (1u << 20)

static struct vgpu_wire w = { .fd = -1 };

/* A message of type and flags; its reply's code, its payload into out
 * (at most outlen); -1 when the connection closed. */
static long exchange(uint16_t type, uint32_t call, uint32_t flags, const void *in, size_t inlen, void *out,
                     size_t outlen, int passed)
{
    struct iovec q = { (void *)in, inlen };
    struct vgpu_remote_hdr h;
    if (vgpu_wire_send(&w, type, call, flags, &q, 1) != 0 ||
        (passed >= 0 && vgpu_wire_send_fd(w.fd, type, 0, NULL, 0, passed) != 0) || vgpu_wire_read_hdr(&w, &h) != 0 ||
        h.len > outlen || (h.len && vgpu_wire_read(&w, out, h.len) != 0))
        return -1;
    return h.call;
}

static long call(unsigned slot, uint32_t flags, const uint64_t *in, unsigned nin, uint64_t *out)
{
    return exchange(VGPU_REMOTE_CALL, slot, flags, in, nin * 8, out, 64, -1);
}

/* A memfd of n bytes, mapped at *p; sealed against shrinking if sealed. */
static int block(size_t n, bool sealed, void **p)
{
    int fd = memfd_create("raw-guest", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)n) != 0 ||
        (*p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED ||
        (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)) {
        perror("raw_guest: a memfd");
        exit(1);
    }
    return fd;
}

/* The device view of the last block shared. */
static uint64_t view;

static long share(void *p, uint64_t n, int fd)
{
    uint64_t q[2] = { (uint64_t)(uintptr_t)p, n };
    view = 0;
    return exchange(VGPU_REMOTE_SHARE, 0, 0, q, sizeof(q), &view, sizeof(view), fd);
}

static long unshare(void *p)
{
    uint64_t q = (uint64_t)(uintptr_t)p;
    return exchange(VGPU_REMOTE_UNSHARE, 0, 0, &q, sizeof(q), NULL, 0, -1);
}

/* A shared copy, its message as forwarder/remote/spec/cuda.remote lays it
 * out (cuMemcpyHtoDAsync_v2's, cuMemcpyDtoHAsync_v2's): the device side,
 * the length, the stream (0: a synchronous copy), the guest's address. */
static long shared_copy(unsigned slot, uint64_t dev, uint64_t n, const void *guest)
{
    uint64_t q[4] = { dev, n, 0, (uint64_t)(uintptr_t)guest };
    return call(slot, VGPU_REMOTE_SHARED, q, 4, NULL);
}

/* Connects to the executor at path and says hello (with driver settings
 * it may and may not take); the hello's reply's words in window. */
static int connect_and_hello(const char *path, uint64_t window[3])
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    if (w.fd >= 0)
        close(w.fd);
    w.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (w.fd < 0 || connect(w.fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        perror("raw_guest: connect");
        return -1;
    }
    uint64_t hello[3] = { VGPU_REMOTE_CUDA_ABI_HASH, (uint64_t)getpid(), 0 };
    char comm[16] = "raw_guest";
    /* Driver settings: one it may give, one it may not, one whose value is not plain. */
    static const char env[] = "CUDA_DEVICE_ORDER=PCI_BUS_ID\0LD_PRELOAD=/tmp/evil.so\0CUDA_VISIBLE_DEVICES=$(id)";
    struct iovec v[3] = { { hello, sizeof(hello) }, { comm, sizeof(comm) }, { (void *)env, sizeof(env) } };
    struct vgpu_remote_hdr h;
    if (vgpu_wire_send(&w, VGPU_REMOTE_HELLO, 0, 0, v, 3) != 0 || vgpu_wire_read_hdr(&w, &h) != 0 || h.call != 0 ||
        h.len != 3 * sizeof(uint64_t) || vgpu_wire_read(&w, window, 3 * sizeof(uint64_t)) != 0) {
        fprintf(stderr, "raw_guest: the executor refused the hello\n");
        return -1;
    }
    return 0;
}

/* cuModuleLoadData of n bytes of image, whole, or (hash non-NULL) by hash. */
static long load(const char *image, size_t n, const uint8_t *hash)
{
    uint64_t len = hash ? VGPU_SHA256_BYTES : n, handle = 0;
    struct iovec q[2] = { { &len, sizeof(len) }, { hash ? (void *)hash : (void *)image, len } };
    struct vgpu_remote_hdr h;
    if (vgpu_wire_send(&w, VGPU_REMOTE_CALL, SLOT(cuModuleLoadData), hash ? VGPU_REMOTE_BY_HASH : 0, q, 2) != 0 ||
        vgpu_wire_read_hdr(&w, &h) != 0 || h.len > sizeof(handle) || (h.len && vgpu_wire_read(&w, &handle, h.len) != 0))
        return -1;
    return h.call;
}

/* What the steps share: the executor's socket, the hello's window, a
 * device allocation, and the blocks of shared memory. */
static struct {
    const char *socket;
    uint64_t window[3];
    uint64_t dev;
    void *loose, *sealed;
} g;

static int hello(void)
{
    if (connect_and_hello(g.socket, g.window) != 0)
        return 1;
    printf("a window offered: %s\n", g.window[1] >= 4 * MiB ? "yes" : "no");
    return 0;
}

static int context_and_memory(void)
{
    uint64_t out[8] = { 0 }, in[2] = { 0, 0 };
    printf("cuInit: %ld\n", call(SLOT(cuInit), 0, in, 2, out));
    printf("cuDevicePrimaryCtxRetain: %ld\n", call(SLOT(cuDevicePrimaryCtxRetain), 0, in, 2, out));
    in[1] = out[0];
    printf("cuCtxSetCurrent: %ld\n", call(SLOT(cuCtxSetCurrent), 0, in, 2, out));
    in[1] = MiB;
    printf("cuMemAlloc_v2: %ld\n", call(SLOT(cuMemAlloc_v2), 0, in, 2, out));
    g.dev = out[0];
    return 0;
}

/* A block whose memory could shrink, or is shorter than said, or overlaps
 * one shared already. */
static int share_sealed_blocks_only(void)
{
    int fd = block(MiB, false, &g.loose);
    printf("SHARE unsealed: %ld\n", share(g.loose, MiB, fd));
    close(fd);
    fd = block(MiB, true, &g.sealed);
    printf("SHARE longer than its memory: %ld\n", share(g.sealed, 2 * MiB, fd));
    printf("SHARE: %ld\n", share(g.sealed, MiB, fd));
    printf("its device view is elsewhere: %s\n", view && view != (uint64_t)(uintptr_t)g.sealed ? "yes" : "no");
    printf("SHARE again, overlapping: %ld\n", share((char *)g.sealed + 4096, 4096, fd));
    close(fd);
    return 0;
}

/* The bytes go from the shared memory, not the message: written there,
 * copied to the device by name, read back through a plain copy. */
static int shared_copies(void)
{
    memset(g.sealed, 0x5a, MiB);
    printf("cuMemcpyHtoD_v2 shared: %ld\n", shared_copy(SLOT(cuMemcpyHtoD_v2), g.dev, MiB, g.sealed));
    uint64_t back_in[3] = { g.dev + 4096, 8, 0 };
    unsigned char back[8] = { 0 };
    long r = exchange(VGPU_REMOTE_CALL, SLOT(cuMemcpyDtoH_v2), 0, back_in, 24, back, sizeof(back), -1);
    printf("the device holds the shared bytes: %s (%ld)\n", r == 0 && back[0] == 0x5a && back[7] == 0x5a ? "yes" : "no",
           r);
    memset(g.sealed, 0, MiB);
    printf("cuMemcpyDtoH_v2 shared: %ld\n", shared_copy(SLOT(cuMemcpyDtoH_v2), g.dev, MiB, g.sealed));
    printf("the shared memory holds the device's bytes: %s\n",
           ((unsigned char *)g.sealed)[MiB - 1] == 0x5a ? "yes" : "no");
    return 0;
}

/* Copies name shared bytes only within a block and a device allocation,
 * and not after UNSHARE. */
static int shared_copies_within_bounds(void)
{
    printf("shared copy of an address not shared: %ld\n",
           shared_copy(SLOT(cuMemcpyHtoD_v2), g.dev, 8, (char *)g.sealed + 2 * MiB));
    printf("shared copy past the block's end: %ld\n",
           shared_copy(SLOT(cuMemcpyHtoD_v2), g.dev, 8192, (char *)g.sealed + MiB - 4096));
    printf("shared copy past the device allocation: %ld\n",
           shared_copy(SLOT(cuMemcpyDtoH_v2), g.dev + 4096, MiB, g.sealed));
    printf("UNSHARE not shared: %ld\n", unshare(g.loose));
    printf("UNSHARE: %ld\n", unshare(g.sealed));
    printf("shared copy after UNSHARE: %ld\n", shared_copy(SLOT(cuMemcpyHtoD_v2), g.dev, 8, g.sealed));
    return 0;
}

/* In the window: at the same address in the executor, its device view
 * there; one that runs out of the window's end is refused. */
static int share_in_the_window(void)
{
    int fd;
    void *inside = mmap((void *)(uintptr_t)(g.window[0] + 2 * MiB), MiB, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_FIXED_NOREPLACE, fd = block(MiB, true, &g.loose), 0);
    printf("SHARE in the window: %ld\n", inside == MAP_FAILED ? -2 : share(inside, MiB, fd));
    printf("its device view is its address: %s\n", view == (uint64_t)(uintptr_t)inside ? "yes" : "no");
    printf("SHARE not on a page: %ld\n", share((void *)(uintptr_t)(g.window[0] + 8 * MiB + 8), 4096, fd));
    printf("SHARE across the window's end: %ld\n",
           share((void *)(uintptr_t)(g.window[0] + g.window[1] - 4096), 2 * 4096, fd));
    close(fd);
    return 0;
}

/* Images by hash: one the cache has not got is a miss; one sent whole
 * (the executor hashes it itself) is then named by its hash, and a hash
 * of other bytes still misses. */
static int images_by_hash(void)
{
    printf("an image cache offered: %s\n", g.window[2] & VGPU_REMOTE_HELLO_IMAGE_CACHE ? "yes" : "no");
    size_t n = 128 << 10;
    char *image = malloc(n);
    uint8_t hash[VGPU_SHA256_BYTES];
    memset(image, 'x', n - 1);
    memcpy(image, "fakegpu", 7);
    image[n - 1] = 0;
    snprintf(image + 7, 32, " %d", (int)getpid()); /* bytes no earlier run sent */
    image[strlen(image)] = 'x';
    vgpu_sha256(image, n, hash);
    printf("cuModuleLoadData by the hash of an image never sent: %s\n",
           load(image, n, hash) == VGPU_REMOTE_MISS ? "miss" : "hit");
    printf("cuModuleLoadData whole: %ld\n", load(image, n, NULL));
    printf("cuModuleLoadData by its hash: %ld\n", load(image, n, hash));
    image[100] ^= 1;
    vgpu_sha256(image, n, hash);
    printf("cuModuleLoadData by the hash of other bytes: %s\n",
           load(image, n, hash) == VGPU_REMOTE_MISS ? "miss" : "hit");
    free(image);
    return 0;
}

/* A fatbin wrapper as nvcc makes it, its data pointer one the guest chose:
 * a driver that loads it reads there (the fake does too), so the executor
 * refuses it as a module's image and as a link's input; text with a
 * control character is no PTX either.  Each is refused with 200
 * (CUDA_ERROR_INVALID_IMAGE) and the executor serves on. */
static const struct {
    uint32_t magic, version;
    uint64_t data, prelinked;
} forged_wrapper = { 0x466243b1, 1, 0x4141414141414140ull, 0 };

static long link_one(uint32_t type, const void *data, uint64_t n)
{
    /* cuLinkComplete's message (forwarder/remote/spec/cuda.remote): no
     * options, one input of that type, no name. */
    uint64_t head[6] = { 0, 1, type, 0, n, n };
    unsigned char out[256];
    struct iovec q[2] = { { head, sizeof(head) }, { (void *)data, n } };
    struct vgpu_remote_hdr h;
    if (vgpu_wire_send(&w, VGPU_REMOTE_CALL, SLOT(cuLinkComplete), 0, q, 2) != 0 || vgpu_wire_read_hdr(&w, &h) != 0 ||
        h.len > sizeof(out) || (h.len && vgpu_wire_read(&w, out, h.len) != 0))
        return -1;
    return h.call;
}

static int images_that_point_elsewhere(void)
{
    printf("cuModuleLoadData of a fatbin wrapper: %ld\n", load((const char *)&forged_wrapper, sizeof(forged_wrapper), NULL));
    printf("cuLinkComplete of a fatbin wrapper: %ld\n",
           link_one(CU_JIT_INPUT_FATBINARY, &forged_wrapper, sizeof(forged_wrapper)));
    static const char control[] = "fakegpu\001 not text";
    printf("cuModuleLoadData of text with a control character: %ld\n", load(control, sizeof(control), NULL));
    static const char text[] = "fakegpu after them";
    printf("cuModuleLoadData after them: %ld\n", load(text, sizeof(text), NULL));
    return 0;
}

/* A texture object over device memory that is none of the guest's (an
 * address of the executor's, for all it knows): the executor refuses it
 * (1) before its driver reads the descriptor, and says so, on a
 * connection of its own. */
static int resources_not_the_guests(void)
{
    if (connect_and_hello(g.socket, g.window) != 0)
        return 1;
    uint64_t out[8] = { 0 }, in[2] = { 0, 0 };
    call(SLOT(cuInit), 0, in, 2, out);
    call(SLOT(cuDevicePrimaryCtxRetain), 0, in, 2, out);
    in[1] = out[0];
    call(SLOT(cuCtxSetCurrent), 0, in, 2, out);
    /* cuTexObjectCreate's message (forwarder/remote/spec/cuda.remote): the
     * resource, the sampling, no view. */
    struct {
        CUDA_RESOURCE_DESC res;
        CUDA_TEXTURE_DESC tex;
        uint64_t has_view;
        CUDA_RESOURCE_VIEW_DESC view;
    } q;
    memset(&q, 0, sizeof(q));
    q.res.resType = CU_RESOURCE_TYPE_LINEAR;
    q.res.res.linear.devPtr = (CUdeviceptr)(uintptr_t)&g; /* the raw guest's own address */
    q.res.res.linear.format = CU_AD_FORMAT_FLOAT;
    q.res.res.linear.numChannels = 1;
    q.res.res.linear.sizeInBytes = 4096;
    uint64_t tex = 0;
    printf("cuTexObjectCreate over memory not the guest's: %ld\n",
           exchange(VGPU_REMOTE_CALL, SLOT(cuTexObjectCreate), 0, &q, sizeof(q), &tex, sizeof(tex), -1));
    return 0;
}

/* A call that is no such copy flagged as one closes the connection; on
 * another connection, a hash on a call that loads no image closes it. */
static int flags_a_call_cannot_take(void)
{
    uint64_t sync_in[1] = { 0 }, out[8] = { 0 };
    printf("cuCtxSynchronize flagged shared: %ld\n", call(SLOT(cuCtxSynchronize), VGPU_REMOTE_SHARED, sync_in, 1, out));
    if (connect_and_hello(g.socket, g.window) != 0)
        return 1;
    printf("cuCtxSynchronize flagged by hash: %ld\n",
           call(SLOT(cuCtxSynchronize), VGPU_REMOTE_BY_HASH, sync_in, 1, out));
    return 0;
}

/* On a new connection, two lanes (LANE, a socket pair's end beside it):
 * one waits for an asynchronous call numbered 1 that never comes, the
 * other breaks with a message of no protocol.  The executor ends the
 * wait and shuts the first connection: the guest's calls fail, none
 * hangs. */
static int a_lane_lost(void)
{
    if (connect_and_hello(g.socket, g.window) != 0)
        return 1;
    int lanes[2];
    for (int i = 0; i < 2; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
            exchange(VGPU_REMOTE_LANE, 0, 0, NULL, 0, NULL, 0, sv[1]) != 0)
            return 1;
        close(sv[1]);
        lanes[i] = sv[0];
    }
    struct vgpu_wire waiting = { .fd = lanes[0], .order = 1 };
    uint64_t none = 0;
    struct iovec q = { &none, sizeof(none) };
    if (vgpu_wire_send(&waiting, VGPU_REMOTE_CALL, SLOT(cuCtxSynchronize), 0, &q, 1) != 0)
        return 1;
    if (write(lanes[1], "no protocol at all, and long enough for a header", 48) != 48)
        return 1;
    struct vgpu_remote_hdr h;
    struct timeval limit = { .tv_sec = 10 };
    setsockopt(lanes[0], SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    setsockopt(w.fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    bool waiter_ended = vgpu_wire_read_hdr(&waiting, &h) != 0 && errno != EAGAIN && errno != EWOULDBLOCK;
    bool first_shut = vgpu_wire_read_hdr(&w, &h) != 0 && errno != EAGAIN && errno != EWOULDBLOCK;
    printf("a lane lost: the waiting lane ends %s, the first connection is shut %s\n", waiter_ended ? "yes" : "no",
           first_shut ? "yes" : "no");
    close(lanes[0]);
    close(lanes[1]);
    return 0;
}

/* In order, on one connection (the last two open others). */
static const struct {
    const char *name;
    int (*run)(void);
} steps[] = {
    { "hello", hello },
    { "a context and device memory", context_and_memory },
    { "only sealed blocks are shared", share_sealed_blocks_only },
    { "shared copies", shared_copies },
    { "shared copies within their bounds", shared_copies_within_bounds },
    { "blocks shared in the window", share_in_the_window },
    { "images by hash", images_by_hash },
    { "images that point elsewhere", images_that_point_elsewhere },
    { "resources not the guest's", resources_not_the_guests },
    { "flags a call cannot take", flags_a_call_cannot_take },
    { "a lane lost", a_lane_lost },
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: raw_guest SOCKET\n");
        return 2;
    }
    g.socket = argv[1];
    for (size_t i = 0; i < sizeof(steps) / sizeof(*steps); i++)
        if (steps[i].run() != 0) {
            fprintf(stderr, "raw_guest: %s: no answer from the executor\n", steps[i].name);
            return 1;
        }
    return 0;
}
