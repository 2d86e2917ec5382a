/*
 * Pageable copies staged through page-locked memory, as the driver itself
 * stages them (manual.h): a copy of at least VGPU_REMOTE_STAGED_MIN bytes
 * between the guest's pageable memory and the device goes in pieces
 * through two blocks of page-locked memory the guest shares with its
 * executor (host_memory.c), so that the guest's copy of one piece into a
 * block overlaps the GPU's copy of the other, and no piece is in a
 * message: one copy by the CPU, as natively, where a message's bytes take
 * three (into the ring, out of it, into the driver's own staging).
 *
 * Pieces copied to the program's memory go around the CPU's caches
 * (nontemporal.c): ordinary stores read each line before writing it,
 * which held copies from the device to two thirds of the driver's rate.
 * Pieces copied into a block are copied with memcpy, which is as fast
 * there.
 *
 * An event recorded after each piece's copy on the copy's stream says when
 * its block may be used again (cuEventSynchronize: a round trip a piece,
 * which the pieces' size makes rare).  Events are their context's: each
 * context the copies' streams belong to has its pair, known by the
 * context's handle and id (a primary context reset keeps its handle but
 * ends its events, and takes another id).  The blocks are the process's,
 * one copy at a time (another thread's meanwhile goes in messages); a
 * block whose piece is still on another stream is not waited for (that
 * stream may wait for the host): the copy goes in messages.  Not staged
 * either: a copy while a stream capture is open (a capture would take the
 * block, not the caller's bytes), on a stream of a context that is not the
 * current one, or where the blocks cannot be had (the vGPU's page-locked
 * memory spent, a VM's channel with no room).
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/copies/nontemporal.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/transport/wire.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name
/* Each block's size: a piece. */
#define PIECE (8u << 20)
/* Contexts whose events are kept; a further one's evicts the oldest's
 * pair, let go of without a call (its context may be gone). */
#define CONTEXTS 4

struct events {
    CUcontext ctx;
    unsigned long long id;
    CUevent done[2];
    unsigned used; /* when last used: the least is evicted */
};
/* A block's piece in flight: the stream it is on (a handle of its
 * context's, of that id: the legacy stream is each context's) and its event. */
struct piece {
    bool pending;
    CUstream stream;
    unsigned long long id;
    CUevent done;
};

/* The process's blocks, their pieces and the contexts' events.  Owned by
 * this file, under lock, taken by one copy at a time (tried).  A child of
 * fork has the parent's blocks as its private scratch (host_memory.c),
 * which it lets go of at its first staged copy, and no events. */
static struct {
    void *block[2];
    void *orphan[2]; /* a parent's blocks, in a child of fork: to free */
    struct piece piece[2];
    struct events ctx[CONTEXTS];
    unsigned uses;
    bool unshared; /* a block was not shared with the executor: never asked again */
} staging;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void child_after_fork(void)
{
    pthread_mutex_init(&lock, NULL);
    void *a = staging.block[0], *b = staging.block[1];
    memset(&staging, 0, sizeof(staging));
    staging.orphan[0] = a;
    staging.orphan[1] = b;
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

/* Under lock: the two blocks, shared with the executor; false when they
 * cannot be had. */
static bool blocks(void)
{
    for (int i = 0; i < 2; i++)
        if (staging.orphan[i]) {
            VGPU_REMOTE_CUDA(cuMemFreeHost)(staging.orphan[i]);
            staging.orphan[i] = NULL;
        }
    for (int i = 0; i < 2 && !staging.unshared; i++) {
        if (staging.block[i])
            continue;
        if (VGPU_REMOTE_CUDA(cuMemHostAlloc)(&staging.block[i], PIECE, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) {
            staging.block[i] = NULL;
            return false; /* out of memory now: asked again at the next copy */
        }
        /* A block the executor was not given (its vGPU's page-locked
         * memory spent) is the guest's alone: of no use here. */
        if (!vgpu_remote_host_shared(staging.block[i], PIECE))
            staging.unshared = true;
        else
            vgpu_remote_host_scratch(staging.block[i]);
    }
    if (!staging.unshared)
        return true;
    for (int i = 0; i < 2; i++)
        if (staging.block[i])
            VGPU_REMOTE_CUDA(cuMemFreeHost)(staging.block[i]);
    staging.block[0] = staging.block[1] = NULL;
    return false;
}

/* Under lock: the events of the current context, which stream's copies
 * are made in; NULL when it has none to give (the copy goes in messages). */
static struct events *events_for(CUstream stream)
{
    CUcontext current = NULL, of_stream = NULL;
    unsigned long long id = 0;
    if (VGPU_REMOTE_CUDA(cuCtxGetCurrent)(&current) != CUDA_SUCCESS || !current)
        return NULL;
    /* A stream's own context (not the legacy or per-thread stream's, which are the current one's). */
    if ((uintptr_t)stream > (uintptr_t)CU_STREAM_PER_THREAD &&
        (VGPU_REMOTE_CUDA(cuStreamGetCtx)(stream, &of_stream) != CUDA_SUCCESS || of_stream != current))
        return NULL;
    if (VGPU_REMOTE_CUDA(cuCtxGetId)(current, &id) != CUDA_SUCCESS)
        return NULL;
    struct events *e = NULL, *oldest = &staging.ctx[0];
    for (int i = 0; i < CONTEXTS && !e; i++) {
        if (staging.ctx[i].ctx == current && staging.ctx[i].id == id)
            e = &staging.ctx[i];
        else if (staging.ctx[i].used < oldest->used)
            oldest = &staging.ctx[i];
    }
    if (!e) {
        e = oldest; /* its pair let go of: its pieces, if any, keep their events */
        memset(e, 0, sizeof(*e));
        for (int i = 0; i < 2; i++)
            if (VGPU_REMOTE_CUDA(cuEventCreate)(&e->done[i], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
                memset(e, 0, sizeof(*e));
                return NULL;
            }
        e->ctx = current;
        e->id = id;
    }
    e->used = ++staging.uses;
    return e;
}

/* Under lock: block i's piece, if it is on another stream than stream
 * (of the context of id), done; false while it is not (its stream may
 * wait for the host). */
static bool free_of_others(int i, CUstream stream, unsigned long long id)
{
    struct piece *p = &staging.piece[i];
    if (!p->pending || (p->stream == stream && p->id == id))
        return true;
    /* Done, or failed with its events (a context gone): no longer the block's. */
    if (VGPU_REMOTE_CUDA(cuEventQuery)(p->done) == CUDA_ERROR_NOT_READY)
        return false;
    p->pending = false;
    return true;
}

/* Waits until block i's piece is copied; its code. */
static CUresult drained(int i)
{
    struct piece *p = &staging.piece[i];
    if (!p->pending)
        return CUDA_SUCCESS;
    p->pending = false;
    return VGPU_REMOTE_CUDA(cuEventSynchronize)(p->done);
}

/* The lock taken, the blocks free of other streams' pieces and events
 * ready in *e, or false (the copy goes in messages). */
static bool take(size_t n, CUstream stream, struct events **e)
{
    pthread_once(&atfork_once, register_atfork);
    if (n < VGPU_REMOTE_STAGED_MIN || vgpu_remote_capturing() || pthread_mutex_trylock(&lock) != 0)
        return false;
    if ((*e = events_for(stream)) && free_of_others(0, stream, (*e)->id) && free_of_others(1, stream, (*e)->id) &&
        blocks())
        return true;
    pthread_mutex_unlock(&lock);
    return false;
}

/* Block b's piece sent: its event recorded after it on stream.  A failure
 * lets go of the context's events (made again at the next copy). */
static CUresult recorded(CUresult r, struct events *e, int b, CUstream stream)
{
    if (r == CUDA_SUCCESS)
        r = VGPU_REMOTE_CUDA(cuEventRecord)(e->done[b], stream);
    staging.piece[b] = (struct piece){ r == CUDA_SUCCESS, stream, e->id, e->done[b] };
    if (r != CUDA_SUCCESS)
        memset(e, 0, sizeof(*e));
    return r;
}

bool vgpu_remote_staged_to_device(CUdeviceptr dst, const void *src, size_t n, CUstream stream, bool sync,
                                  CUresult *r)
{
    struct events *e;
    if (!take(n, stream, &e))
        return false;
    int last = 0;
    *r = CUDA_SUCCESS;
    for (size_t done = 0, k = 0; done < n && *r == CUDA_SUCCESS; k++) {
        int b = (int)(k & 1);
        size_t c = n - done < PIECE ? n - done : PIECE;
        if ((*r = drained(b)) != CUDA_SUCCESS)
            break;
        memcpy(staging.block[b], (const char *)src + done, c);
        struct vgpu_in_cuMemcpyHtoDAsync_v2 in = {
            .dstDevice = dst + done, .ByteCount = c, .srcHost = staging.block[b], .hStream = stream,
        };
        *r = recorded((CUresult)vgpu_remote_send_cuMemcpyHtoDAsync_v2(SLOT(cuMemcpyHtoDAsync_v2),
                                                                       VGPU_REMOTE_SHARED, &in),
                      e, b, stream);
        last = b;
        done += c;
    }
    /* A synchronous copy is done when it returns; an asynchronous one's
     * last pieces are waited for by the next copy that needs their block. */
    if (*r == CUDA_SUCCESS && sync)
        *r = drained(last);
    if (*r == CUDA_SUCCESS && sync)
        *r = drained(!last);
    pthread_mutex_unlock(&lock);
    return true;
}

/* The piece of c bytes at src + at into block b, its event after it. */
static CUresult fetch(struct events *e, CUdeviceptr src, size_t at, size_t c, int b, CUstream stream)
{
    struct vgpu_in_cuMemcpyDtoHAsync_v2 in = { .srcDevice = src + at, .ByteCount = c, .hStream = stream };
    return recorded((CUresult)vgpu_remote_send_cuMemcpyDtoHAsync_v2(SLOT(cuMemcpyDtoHAsync_v2), VGPU_REMOTE_SHARED,
                                                                     &in, staging.block[b]),
                    e, b, stream);
}

bool vgpu_remote_staged_to_host(void *dst, CUdeviceptr src, size_t n, CUstream stream, CUresult *r)
{
    struct events *e;
    if (!take(n, stream, &e))
        return false;
    /* Piece k+1 is asked for before piece k is copied out of its block. */
    *r = drained(0);
    if (*r == CUDA_SUCCESS)
        *r = drained(1);
    if (*r == CUDA_SUCCESS)
        *r = fetch(e, src, 0, n < PIECE ? n : PIECE, 0, stream);
    for (size_t done = 0, k = 0; done < n && *r == CUDA_SUCCESS; k++) {
        int b = (int)(k & 1);
        size_t c = n - done < PIECE ? n - done : PIECE, next = done + c;
        if (next < n)
            *r = fetch(e, src, next, n - next < PIECE ? n - next : PIECE, !b, stream);
        if (*r == CUDA_SUCCESS)
            *r = drained(b);
        if (*r == CUDA_SUCCESS)
            vgpu_remote_copy_nontemporal((char *)dst + done, staging.block[b], c);
        done = next;
    }
    if (*r != CUDA_SUCCESS) { /* what is still in flight is waited for: the blocks are to be used again */
        drained(0);
        drained(1);
    }
    pthread_mutex_unlock(&lock);
    return true;
}
