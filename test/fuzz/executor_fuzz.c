/*
 * libFuzzer target: the executor's side of the remote driver's protocol
 * (forwarder/remote/executor/serve.c, the hand-written calls and the generated dispatchers), as
 * a hostile guest meets it.  The input is a run of messages, each a header
 * (its call taken modulo the slots, its length cut to what is left) and its
 * payload, served one after another, for CUDA or NVML as the first byte
 * says, against a driver whose every entry
 * point succeeds and writes nothing, until one breaks the protocol.  What
 * the executor reads of a message (lengths, handles, a launch's parameters,
 * names, images) must stay within it whatever the bytes say.  Built with
 * clang's -fsanitize=fuzzer,address,undefined (test/fuzz/meson.build).
 */
#include "forwarder/remote/transport/wire.h"
#include "forwarder/remote/executor/executor.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int succeed(void)
{
    return 0;
}

/* The executor's replies go to a socket pair whose other end is emptied
 * after each message. */
static int sink = -1, drain = -1;

static void empty_drain(void)
{
    char buf[65536];
    while (read(drain, buf, sizeof(buf)) > 0)
        ;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* Every refused message is logged: not a line a run. */
    setenv("VGPU_LOG_FILE", "/dev/null", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (sink < 0) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
            abort();
        sink = sv[0];
        drain = sv[1];
    }
    /* The first byte picks the library. */
    if (size < 1)
        return 0;
    const struct vgpu_exec_library *lib = data[0] & 1 ? &vgpu_exec_nvml : &vgpu_exec_cuda;
    data++;
    size--;
    void *fn[2048];
    for (unsigned i = 0; i < lib->count && i < 2048; i++)
        fn[i] = (void *)succeed;
    struct vgpu_exec_session session; /* this input's */
    vgpu_exec_session_init(&session);
    struct vgpu_exec x = { .wire = { .fd = sink }, .s = &session, .lib = lib, .fn = fn, .passed_fd = -1, .fd_back = -1 };
    /* Handles the guest was given: some inputs name them. */
    for (uint64_t h = 0x1000; h < 0x1010; h++)
        vgpu_exec_handle_add(&x, h);
    while (size >= sizeof(struct vgpu_remote_hdr)) {
        struct vgpu_remote_hdr h;
        memcpy(&h, data, sizeof(h));
        data += sizeof(h);
        size -= sizeof(h);
        h.magic = VGPU_REMOTE_MAGIC;
        h.version = VGPU_REMOTE_VERSION;
        h.type = VGPU_REMOTE_CALL;
        h.call %= lib->count;
        h.flags &= VGPU_REMOTE_ASYNC | VGPU_REMOTE_SHARED;
        if (h.len > size)
            h.len = size;
        /* Exactly the payload's bytes and the one the executor's buffer
         * has to spare (where a request's string is NUL-ended), so that
         * reading past them is caught. */
        void *payload = malloc(h.len + 1);
        memcpy(payload, data, h.len);
        int r = vgpu_exec_one(&x, &h, payload);
        free(payload);
        empty_drain();
        if (r == VGPU_EXEC_CLOSE)
            break;
        data += h.len;
        size -= h.len;
    }
    vgpu_exec_context_changed(&x); /* frees the layouts learnt */
    while (session.reserved) {
        struct vgpu_exec_range *g = session.reserved;
        session.reserved = g->next;
        free(g);
    }
    while (session.kernel_of) {
        struct vgpu_exec_kernel *k = session.kernel_of;
        session.kernel_of = k->next;
        free(k);
    }
    free(session.handles.v);
    free(session.kernels.v);
    return 0;
}
