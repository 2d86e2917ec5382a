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
 * An event recorded after each piece's copy says when its block may be
 * used again (cuEventSynchronize: a round trip a piece, which the pieces'
 * size makes rare).  The blocks are the process's, one copy at a time
 * (another thread's meanwhile goes in messages); the events are of the
 * context current at the copy, made again when it is another.  Not staged:
 * a copy while a stream capture is open (a capture would take the block,
 * not the caller's bytes), or where the blocks cannot be had (the vGPU's
 * page-locked memory spent, a VM's channel with no room): those go in
 * messages.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/transport/wire.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name
/* Each block's size: a piece. */
#define PIECE (8u << 20)

/* The process's blocks and the events of their pieces.  Owned by this
 * file: taken by one copy at a time (lock, tried); a child of fork starts
 * with none (the parent's blocks are its executor's). */
static struct {
    void *block[2];
    CUcontext ctx; /* the events' */
    CUevent done[2];
    bool pending[2]; /* a piece's copy in flight in block i */
    bool unavailable; /* the blocks could not be had: never asked again */
} staging;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void child_after_fork(void)
{
    pthread_mutex_init(&lock, NULL);
    memset(&staging, 0, sizeof(staging));
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

/* Under lock: the blocks, and events of the current context; false when
 * the copy is to go in messages. */
static bool ready(void)
{
    if (staging.unavailable)
        return false;
    for (int i = 0; i < 2 && !staging.unavailable; i++) {
        if (staging.block[i])
            continue;
        if (VGPU_REMOTE_CUDA(cuMemHostAlloc)(&staging.block[i], PIECE, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS)
            staging.block[i] = NULL;
        /* A block the executor was not given (its vGPU's page-locked memory
         * spent) is the guest's alone: of no use here. */
        if (!staging.block[i] || !vgpu_remote_host_shared(staging.block[i], PIECE))
            staging.unavailable = true;
    }
    if (staging.unavailable) {
        for (int i = 0; i < 2; i++)
            if (staging.block[i])
                VGPU_REMOTE_CUDA(cuMemFreeHost)(staging.block[i]);
        staging.block[0] = staging.block[1] = NULL;
        return false;
    }
    CUcontext ctx = NULL;
    if (VGPU_REMOTE_CUDA(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS || !ctx)
        return false;
    if (ctx == staging.ctx && staging.done[0] && staging.done[1])
        return true;
    for (int i = 0; i < 2; i++) {
        if (staging.done[i]) {
            if (staging.pending[i])
                VGPU_REMOTE_CUDA(cuEventSynchronize)(staging.done[i]);
            VGPU_REMOTE_CUDA(cuEventDestroy_v2)(staging.done[i]);
        }
        staging.done[i] = NULL;
        staging.pending[i] = false;
    }
    staging.ctx = NULL;
    for (int i = 0; i < 2; i++)
        if (VGPU_REMOTE_CUDA(cuEventCreate)(&staging.done[i], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
            staging.done[i] = NULL;
            return false;
        }
    staging.ctx = ctx;
    return true;
}

/* Waits until block i's piece is copied. */
static CUresult drained(int i)
{
    if (!staging.pending[i])
        return CUDA_SUCCESS;
    staging.pending[i] = false;
    return VGPU_REMOTE_CUDA(cuEventSynchronize)(staging.done[i]);
}

/* The lock taken and the blocks ready, or false (the copy goes in messages). */
static bool take(size_t n)
{
    pthread_once(&atfork_once, register_atfork);
    if (n < VGPU_REMOTE_STAGED_MIN || vgpu_remote_capturing() || pthread_mutex_trylock(&lock) != 0)
        return false;
    if (ready())
        return true;
    pthread_mutex_unlock(&lock);
    return false;
}

bool vgpu_remote_staged_to_device(CUdeviceptr dst, const void *src, size_t n, CUstream stream, bool sync,
                                  CUresult *r)
{
    if (!take(n))
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
        *r = (CUresult)vgpu_remote_send_cuMemcpyHtoDAsync_v2(SLOT(cuMemcpyHtoDAsync_v2), VGPU_REMOTE_SHARED, &in);
        if (*r == CUDA_SUCCESS)
            *r = VGPU_REMOTE_CUDA(cuEventRecord)(staging.done[b], stream);
        staging.pending[b] = *r == CUDA_SUCCESS;
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

/* Piece k of a copy from the device into block k & 1, its event after it. */
static CUresult fetch(CUdeviceptr src, size_t at, size_t c, int b, CUstream stream)
{
    struct vgpu_in_cuMemcpyDtoHAsync_v2 in = { .srcDevice = src + at, .ByteCount = c, .hStream = stream };
    CUresult r = (CUresult)vgpu_remote_send_cuMemcpyDtoHAsync_v2(SLOT(cuMemcpyDtoHAsync_v2), VGPU_REMOTE_SHARED,
                                                                 &in, staging.block[b]);
    if (r == CUDA_SUCCESS)
        r = VGPU_REMOTE_CUDA(cuEventRecord)(staging.done[b], stream);
    staging.pending[b] = r == CUDA_SUCCESS;
    return r;
}

bool vgpu_remote_staged_to_host(void *dst, CUdeviceptr src, size_t n, CUstream stream, CUresult *r)
{
    if (!take(n))
        return false;
    /* Piece k+1 is asked for before piece k is copied out of its block. */
    *r = drained(0);
    if (*r == CUDA_SUCCESS)
        *r = drained(1);
    size_t first = n < PIECE ? n : PIECE;
    if (*r == CUDA_SUCCESS)
        *r = fetch(src, 0, first, 0, stream);
    for (size_t done = 0, k = 0; done < n && *r == CUDA_SUCCESS; k++) {
        int b = (int)(k & 1);
        size_t c = n - done < PIECE ? n - done : PIECE, next = done + c;
        if (next < n)
            *r = fetch(src, next, n - next < PIECE ? n - next : PIECE, !b, stream);
        if (*r == CUDA_SUCCESS)
            *r = drained(b);
        if (*r == CUDA_SUCCESS)
            memcpy((char *)dst + done, staging.block[b], c);
        done = next;
    }
    if (*r != CUDA_SUCCESS) { /* what is still in flight is waited for: the blocks are to be used again */
        drained(0);
        drained(1);
    }
    pthread_mutex_unlock(&lock);
    return true;
}
