/*
 * Channels: remote GPUs through memory a guest and the host share with no
 * socket between them (docs/guide/vm.md, "A remote vGPU in a VM"): the BAR of a
 * VM's ivshmem device, backed on the host by a file, or that file itself.
 *
 * The memory is a header page (the host's), then channels, each a control
 * page and a shared-memory ring (ring.h) laid out in place.  A guest
 * process claims a free channel by compare-and-swap, the host's
 * supervisor (vgpu-executor --bar) sees the claim and starts an executor
 * for it, which lays out the ring and says it serves; every message of
 * the remote driver, HELLO first, then crosses the ring.  No side trusts
 * the other: the executor keeps its own positions (ring.h) and the
 * supervisor its own record of which channel has an executor.
 *
 * Liveness, with no socket to hang up: the guest's heartbeat (a thread of
 * the guest process moves it every 100 ms) and its claim (a guest process
 * that ends releases its channel; one that finds the claimer of another
 * channel dead, in its own PID namespace, abandons it for the host), and
 * the supervisor's heartbeat in the header (an executor that ends is said
 * in its channel's state by the supervisor, which outlives it).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VGPU_CHANNELS_MAGIC 0x4e41484355504756ull /* "VGPUCHAN" */
#define VGPU_CHANNELS_VERSION 1
#define VGPU_CHANNELS_PAGE 4096u
#define VGPU_CHANNELS_MAX 256u
/* How often the heartbeats move. */
#define VGPU_CHANNELS_BEAT_MS 100u

/* The header, at offset 0: the host's. */
struct vgpu_channels_header {
    uint64_t magic;          /* written last */
    uint32_t version, count; /* channels */
    uint64_t channel_bytes;  /* each channel's, whole pages, the first at offset VGPU_CHANNELS_PAGE */
    uint64_t epoch;          /* new each time a supervisor lays the memory out */
    uint64_t beat;           /* moved every VGPU_CHANNELS_BEAT_MS while the supervisor lives */
    char vgpu[32];           /* the vGPU the executors are admitted to, NUL-ended */
};

/* A channel's state: the low byte of its claim word; the rest is the
 * claiming guest process's pid. */
enum vgpu_channel_state {
    VGPU_CHANNEL_FREE = 0,      /* the supervisor's: anyone may claim it */
    VGPU_CHANNEL_CLAIMED = 1,   /* the guest's: an executor is wanted */
    VGPU_CHANNEL_SERVING = 2,   /* the executor's: the ring is laid out, HELLO awaited */
    VGPU_CHANNEL_CLOSED = 3,    /* the guest's: it is done with it */
    VGPU_CHANNEL_ABANDONED = 4, /* another guest process's: the claimer is dead */
    VGPU_CHANNEL_DEAD = 5,      /* the supervisor's: the executor ended, the guest has not let go */
};

/* A channel's control page. */
struct vgpu_channel_ctl {
    _Alignas(64) uint64_t claim; /* state | pid << 8 */
    uint64_t pid_ns;             /* the claimer's PID namespace (its inode), 0 until known */
    uint64_t start;              /* its start time (clock ticks after boot, /proc/PID/stat), 0 until known */
    uint64_t guest_beat;         /* moved every VGPU_CHANNELS_BEAT_MS by the claimer */
};

static inline uint64_t vgpu_channel_word(enum vgpu_channel_state s, uint32_t pid)
{
    return (uint64_t)s | (uint64_t)pid << 8;
}

static inline enum vgpu_channel_state vgpu_channel_state_of(uint64_t claim)
{
    return (enum vgpu_channel_state)(claim & 0xff);
}

/* A mapping of the channels' memory, checked: header, and each channel's
 * control page and ring memory. */
struct vgpu_channels {
    unsigned char *base;
    size_t length;
    uint32_t count;
    uint64_t channel_bytes;
};

static inline struct vgpu_channels_header *vgpu_channels_header(const struct vgpu_channels *c)
{
    return (struct vgpu_channels_header *)c->base;
}

static inline struct vgpu_channel_ctl *vgpu_channel_ctl(const struct vgpu_channels *c, uint32_t i)
{
    return (struct vgpu_channel_ctl *)(c->base + VGPU_CHANNELS_PAGE + (size_t)i * c->channel_bytes);
}

/* A channel's streams at most: the rest of it is the bulk. */
#define VGPU_CHANNEL_STREAM_MAX (4ull << 20)

/* The parts of a channel of channel_bytes: its control page; its ring, a
 * page and two streams of *stream bytes (the largest power of two up to
 * VGPU_CHANNEL_STREAM_MAX that fits); and the bulk, the rest, whole pages
 * at *bulk_offset from the channel's start, where the guest's page-locked
 * memory lies (shared with the executor, which maps it too). */
static inline void vgpu_channel_split(uint64_t channel_bytes, uint64_t *stream, uint64_t *bulk_offset,
                                      uint64_t *bulk_size)
{
    uint64_t s = VGPU_CHANNEL_STREAM_MAX;
    while (s > VGPU_CHANNELS_PAGE && 2 * VGPU_CHANNELS_PAGE + 2 * s > channel_bytes)
        s >>= 1;
    *stream = s;
    *bulk_offset = 2 * VGPU_CHANNELS_PAGE + 2 * s;
    *bulk_size = channel_bytes > *bulk_offset ? channel_bytes - *bulk_offset : 0;
}

/* The ring's memory of channel i (after its control page), and its length. */
static inline void *vgpu_channel_ring(const struct vgpu_channels *c, uint32_t i, size_t *length)
{
    uint64_t stream, bulk_offset, bulk_size;
    vgpu_channel_split(c->channel_bytes, &stream, &bulk_offset, &bulk_size);
    *length = VGPU_CHANNELS_PAGE + 2 * stream;
    return (unsigned char *)vgpu_channel_ctl(c, i) + VGPU_CHANNELS_PAGE;
}

/* Channel i's bulk: its offset in the memory (the file), and its size. */
static inline uint64_t vgpu_channel_bulk(const struct vgpu_channels *c, uint32_t i, uint64_t *size)
{
    uint64_t stream, bulk_offset;
    vgpu_channel_split(c->channel_bytes, &stream, &bulk_offset, size);
    return VGPU_CHANNELS_PAGE + (uint64_t)i * c->channel_bytes + bulk_offset;
}

/* Whether length bytes at base hold channels laid out by a supervisor
 * (the header's values in c); false for anything else. */
bool vgpu_channels_check(struct vgpu_channels *c, void *base, size_t length);

/* The host's: lays out length bytes at base as count channels for vGPU
 * name (every channel free, a new epoch).  0, or -1 with err: too small. */
int vgpu_channels_format(struct vgpu_channels *c, void *base, size_t length, uint32_t count, const char *name,
                         char *err, size_t errlen);

/* How long a heartbeat seen still means its side is gone: tracks one
 * word, whose last change is when. */
struct vgpu_beat_watch {
    uint64_t seen, when_ns;
};
/* Whether the word w has not moved for timeout_ns (its first look starts
 * the clock). */
bool vgpu_beat_stale(struct vgpu_beat_watch *b, const uint64_t *w, uint64_t timeout_ns);
