/*
 * The shared-memory ring (docs/design/remote.md): the remote driver's messages
 * between a guest and its executor through memory both map, not through
 * the socket.  Two byte streams, one each way, each a single producer's
 * and a single consumer's: a message is written where the stream's head
 * is, and the head is published when it is whole (or when the stream is
 * full, for a message longer than the stream).  A waiting side spins a
 * bounded time, then sleeps on a futex that the other side wakes only when
 * it says it sleeps; on waking from a sleep it looks at the socket, which
 * stays open for no other purpose than to tell that the other side is
 * gone.
 *
 * The executor makes the memory (a sealed memfd: the guest can neither
 * shrink nor grow it) and sends it over the socket; it never reads back
 * its own positions from the shared memory, and checks the guest's
 * against them: a guest that writes the ring's control words gets its
 * connection closed, never the executor's memory.
 *
 * A ring also runs in memory neither side made for it (a channel of a VM's
 * PCI BAR, forwarder/remote/transport/): there is no socket, a callback
 * tells that the other side is gone, and a waiting side polls after its
 * spin (no futex reaches across a VM's boundary), sleeping longer the
 * longer it waits.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define VGPU_RING_MAGIC 0x474e495250475600ull /* "\0VGPRING" */
#define VGPU_RING_VERSION 1
/* Each stream's bytes, by default and at most (VGPU_REMOTE_RING_MIB sets
 * it, a power of two). */
#define VGPU_RING_DEFAULT_MIB 8u
#define VGPU_RING_MAX_MIB 64u
/* How long a wait spins before it sleeps, by default: at least
 * VGPU_RING_DEFAULT_SPIN_US, and up to VGPU_RING_DEFAULT_SPIN_MAX_US while
 * the waits before it ended within that (a caller paced by Python, its
 * calls tens of microseconds apart, then finds the other side awake).
 * VGPU_REMOTE_SPIN_US=N makes every wait spin N, VGPU_REMOTE_SPIN_MAX_US
 * sets the most; a process that may run on one CPU only spins the least. */
#define VGPU_RING_DEFAULT_SPIN_US 50u
#define VGPU_RING_DEFAULT_SPIN_MAX_US 1000u

/* How long a wait spins: at least least_ns, and up to most_ns as the
 * waits before it were long. */
struct vgpu_ring_spin {
    uint64_t least_ns, most_ns;
};

/* The streams: requests from the guest, replies from the executor. */
enum { VGPU_RING_TO_EXECUTOR = 0, VGPU_RING_TO_GUEST = 1 };

/* One stream's control words, each written by one side only (with
 * __atomic operations: they are shared).  The producer's and the
 * consumer's are on separate cache lines. */
struct vgpu_ring_stream {
    _Alignas(64) uint64_t head; /* bytes written (the producer's) */
    uint32_t data_seq;          /* futex: moved by the producer to wake a sleeping consumer */
    uint32_t consumer_sleeps;   /* the consumer's: it sleeps, or is about to */
    _Alignas(64) uint64_t tail; /* bytes read (the consumer's) */
    uint32_t space_seq;         /* futex: moved by the consumer to wake a sleeping producer */
    uint32_t producer_sleeps;   /* the producer's */
};

/* The shared memory's first page; each stream's bytes follow, at offset
 * and of size (a power of two), as the executor wrote them. */
struct vgpu_ring_shared {
    uint64_t magic;
    uint32_t version, reserved0;
    uint64_t offset[2], size[2];
    uint64_t reserved1[2];
    struct vgpu_ring_stream stream[2];
};

/* One side's end of the ring, private to its process. */
struct vgpu_ring {
    struct vgpu_ring_shared *shared;
    size_t length;    /* of the mapping (0: the memory is not the ring's to unmap) */
    int peer_fd;      /* the socket: readable or hung up when the other side is gone */
    struct vgpu_ring_spin spin; /* how long a wait spins before it sleeps */
    uint64_t spin_next_ns;       /* the next wait's, from the waits before */
    uint64_t full_ns; /* how long writes waited for room, in all (the writer's) */
    /* With no socket: whether the other side is gone, asked after each
     * sleep; a wait then polls instead of sleeping on a futex. */
    bool (*peer_gone)(void *ctx);
    void *peer_ctx;
    struct vgpu_ring_end {
        struct vgpu_ring_stream *s;
        unsigned char *data;
        uint64_t size;
        uint64_t pos;       /* this side's position (head or tail), kept here, never read back */
        uint64_t published; /* the producer's: what the consumer has been shown */
    } tx, rx;
};

/* The executor's side: makes the shared memory of two streams of
 * stream_bytes each (a power of two), sealed; the ring as the executor
 * uses it and the memfd to send, or -1 with errno. */
int vgpu_ring_create(struct vgpu_ring *r, uint64_t stream_bytes, int peer_fd, int *memfd);

/* The guest's side: maps memfd (length bytes) and checks what the
 * executor wrote there.  0, or -1 with errno (EPROTO: not a ring). */
int vgpu_ring_attach(struct vgpu_ring *r, int memfd, uint64_t length, int peer_fd);

/* A ring in memory the caller maps (length bytes at memory, page-aligned),
 * with no socket: laid out there by the executor (streams of stream_bytes,
 * a power of two, as many as fit when 0), or checked by the guest as
 * vgpu_ring_attach checks.  0, or -1 with errno (EINVAL: no room; EPROTO:
 * not a ring).  The ring's peer_gone is the caller's to set. */
int vgpu_ring_format(struct vgpu_ring *r, void *memory, size_t length, uint64_t stream_bytes);
int vgpu_ring_attach_at(struct vgpu_ring *r, void *memory, size_t length);

/* Unmaps (a child of fork forgets its parent's ring so); a ring in the
 * caller's memory is only forgotten. */
void vgpu_ring_detach(struct vgpu_ring *r);

/* Writes the iovecs whole, and shows them to the other side.  0, or -1
 * with errno (ECONNRESET: the other side is gone; EPROTO: it broke the
 * ring's positions). */
int vgpu_ring_write(struct vgpu_ring *r, const struct iovec *iov, int n);

/* Reads exactly len bytes.  0; or -1 with errno: 0 when the other side
 * was gone with nothing left to read, ECONNRESET when it went mid-message,
 * EPROTO when it broke the ring's positions. */
int vgpu_ring_read(struct vgpu_ring *r, void *p, size_t len);

/* The next wait's spin after one that waited ns, the last spin prev:
 * twice the wait, between the least and the most.  A wait longer than the
 * most (the other side idle) goes back to the least at once; a shorter
 * one than prev takes it down a sixteenth of the way, so that a burst of
 * quick answers does not undo it. */
uint64_t vgpu_ring_next_spin(const struct vgpu_ring_spin *spin, uint64_t prev, uint64_t waited);

/* What the environment asks for: each stream's bytes
 * (VGPU_REMOTE_RING_MIB; 0 when VGPU_REMOTE_TRANSPORT=socket turns the
 * ring off) and how long a wait spins (VGPU_REMOTE_SPIN_US,
 * VGPU_REMOTE_SPIN_MAX_US, and the CPUs the process may run on).  0; or -1
 * with a message in err when a variable is malformed (its default taken). */
int vgpu_ring_settings(uint64_t *stream_bytes, struct vgpu_ring_spin *spin, char *err, size_t errlen);
