/*
 * The remote driver's wire format (docs/design/remote.md): every message is a
 * header and len bytes.  A guest sends HELLO once, then CALLs; the
 * executor answers each with a REPLY whose `call` is the CUresult.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define VGPU_REMOTE_MAGIC 0x4d524756u /* "VGRM" */
#define VGPU_REMOTE_VERSION 2
/* No message is longer: bulk copies go in chunks of VGPU_REMOTE_CHUNK. */
#define VGPU_REMOTE_MAX_LEN (64u << 20)
#define VGPU_REMOTE_CHUNK (16u << 20)

/* The guest's settings the driver reads from its environment, which a CUDA
 * HELLO carries (NAME=VALUE, each NUL-ended, at most VGPU_REMOTE_ENV_BYTES
 * in all) for the executor to take as its own before its driver starts:
 * the devices a process sees and their order, and how it launches. */
#define VGPU_REMOTE_ENV_NAMES                                                                                          \
    { "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_MAX_CONNECTIONS" }
#define VGPU_REMOTE_ENV_BYTES 1024u

enum vgpu_remote_type {
    VGPU_REMOTE_HELLO = 1, /* payload: u64 ABI hash, u64 the guest's pid, u64 the library, its command's
                            * name (16 bytes), then (CUDA) its driver settings (VGPU_REMOTE_ENV_NAMES) */
    VGPU_REMOTE_CALL = 2,  /* call: the slot; payload: the call's arguments */
    VGPU_REMOTE_REPLY = 3, /* call: the CUresult; payload: what the call returns */
    VGPU_REMOTE_RING = 4,  /* after HELLO's reply; payload: u64 each stream's bytes (ring.h).  The
                            * reply's call 0 comes with the ring's memfd and u64 its length;
                            * another code with neither: the socket carries on */
    VGPU_REMOTE_SHARE = 5, /* payload: u64 the guest's address of a block of page-locked memory,
                            * u64 its length; its memfd follows on the socket (a SHARE of no
                            * payload).  REPLY: 0 when the executor maps and registers it */
    VGPU_REMOTE_UNSHARE = 6, /* payload: u64 a shared block's guest address.  REPLY: 0 */
    VGPU_REMOTE_LANE = 7,    /* on the first connection, a guest thread's own: no payload; one end
                              * of a socket pair follows on the socket (a LANE of no payload), on
                              * which the executor serves that thread's calls from a thread of its
                              * own.  REPLY: 0 */
};

/* A CALL's flags. */
#define VGPU_REMOTE_ASYNC 1u  /* no reply: an error surfaces at the next synchronizing call */
#define VGPU_REMOTE_SHARED 2u /* a copy whose host side lies in a shared block: named by its guest
                               * address (a word after the copy's), its bytes not in the message */
#define VGPU_REMOTE_BY_HASH 4u /* a module or library load whose image is named by its SHA-256
                                * ([32][hash] where [length][image] would be), for the executor's
                                * cache: REPLY VGPU_REMOTE_MISS asks for it whole */
#define VGPU_REMOTE_FD_IN 8u   /* a file descriptor of the guest's goes with the call: it follows on the
                                * socket (a CALL of no payload), after the call */
#define VGPU_REMOTE_FD_OUT 16u /* the call gives the guest a file descriptor: when it succeeds, it follows
                                * on the socket (a REPLY of no payload), after the reply */

/* The executor's cache of module images (docs/design/remote.md, "Images cross
 * once"): a REPLY's code when a hash names no image it has, the HELLO
 * reply's flag that it has a cache, and the least image sent by hash. */
#define VGPU_REMOTE_MISS 0x4d495353u /* "MISS" */
#define VGPU_REMOTE_HELLO_IMAGE_CACHE 1u
#define VGPU_REMOTE_IMAGE_CACHE_MIN (64u << 10)

/* HELLO's fixed part (its driver settings follow), and its reply's
 * payload. */
struct vgpu_remote_hello {
    uint64_t hash;    /* the ABI's hash (the spec's): guest and executor must agree */
    uint64_t pid;     /* the guest's pid */
    uint64_t library; /* 0 CUDA, 1 NVML */
    char comm[16];    /* its command's name, for the host's listings */
};
struct vgpu_remote_welcome {
    uint64_t window, window_size; /* the window reserved for shared blocks (shared_host.c), or 0 */
    uint64_t flags;               /* VGPU_REMOTE_HELLO_IMAGE_CACHE */
};
/* SHARE's and UNSHARE's payloads, and RING's. */
struct vgpu_remote_share {
    uint64_t guest;  /* the guest's address of the block */
    uint64_t length; /* its bytes */
};
struct vgpu_remote_unshare {
    uint64_t guest;
};
struct vgpu_remote_ring_request {
    uint64_t bytes; /* each stream's */
};

struct vgpu_remote_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t call;
    uint32_t flags; /* CALL: VGPU_REMOTE_ASYNC, _SHARED, _BY_HASH, _FD_IN, _FD_OUT; else 0 */
    uint64_t len;
    /* A guest's calls in the order its threads made them, across its lanes:
     * an asynchronous CALL's number among the process's asynchronous calls
     * (1, 2, ...), made after every one before it; any other message's
     * count of those sent before it, made after them. */
    uint64_t order;
};

struct vgpu_ring;

/* A connection: the socket, and the shared-memory ring once the two sides
 * agreed on one (ring.h), which then carries every message; the order the
 * next message sent on it carries (its sender's to set, 0 for none). */
struct vgpu_wire {
    int fd;
    struct vgpu_ring *ring;
    uint64_t order;
    uint64_t spin_next_ns; /* on the socket: the next read's spin (vgpu_ring_next_spin) */
};

/* Sends a header of type, call and flags with the iovecs as payload (at
 * most 8).  0, or -1 with errno (the peer is gone: EPIPE, ECONNRESET). */
int vgpu_wire_send(struct vgpu_wire *w, uint16_t type, uint32_t call, uint32_t flags, const struct iovec *iov,
                   int n);
/* Reads exactly len bytes.  0, or -1 (errno; 0 at end of file). */
int vgpu_wire_read(struct vgpu_wire *w, void *p, size_t len);
/* Reads a header and checks magic, version and length.  0, or -1. */
int vgpu_wire_read_hdr(struct vgpu_wire *w, struct vgpu_remote_hdr *h);

/* On the socket alone: a message with a file descriptor passed along
 * (SCM_RIGHTS), and a header read with the one that came with it (-1 if
 * none; any more are closed). */
int vgpu_wire_send_fd(int fd, uint16_t type, uint32_t call, const struct iovec *iov, int n, int passed);
int vgpu_wire_read_hdr_fd(int fd, struct vgpu_remote_hdr *h, int *passed);
