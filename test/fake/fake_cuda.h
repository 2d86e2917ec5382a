/*
 * What the parts of the fake libcuda share: fake_cuda.c (devices, contexts,
 * memory, modules, launches), fake_streams.c (streams, events, stream
 * capture, graphs) and gpu/timeline.c (the device side).  Hidden: the
 * library exports only cu* names and the fakegpu_* test helpers.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <cuda.h>

#include "test/fake/gpu/timeline.h"
#include "test/fake/gpu/fakegpu.h"

/* Counts an entry-point call; CUDA_ERROR_NOT_INITIALIZED before cuInit. */
FAKEGPU_HIDDEN CUresult fake_enter(void);

#define ENTER()                                     \
    do {                                            \
        CUresult enter_rc_ = fake_enter();          \
        if (enter_rc_ != CUDA_SUCCESS)              \
            return enter_rc_;                       \
    } while (0)

/*
 * A stream-ordered call NAME and its per-thread variant NAME_ptsz, which
 * differ only in what the NULL stream means (the legacy stream, or the
 * calling thread's own).  impl takes that as its first argument: 0 or 1.
 */
#define WITH_PTSZ(name, impl, params, ...)          \
    CUresult name params                            \
    {                                               \
        ENTER();                                    \
        return impl(0, __VA_ARGS__);                \
    }                                               \
    CUresult name##_ptsz params                     \
    {                                               \
        ENTER();                                    \
        return impl(1, __VA_ARGS__);                \
    }

/* One call exported under two names (a versioned one and the older). */
#define TWO_NAMES(name, other, impl, params, ...)   \
    CUresult name params                            \
    {                                               \
        ENTER();                                    \
        return impl(__VA_ARGS__);                   \
    }                                               \
    CUresult other params                           \
    {                                               \
        ENTER();                                    \
        return impl(__VA_ARGS__);                   \
    }

/* fake_cuda.c */
FAKEGPU_HIDDEN int fake_current_device(void);   /* CUdevice of the current context, or -1 */
FAKEGPU_HIDDEN int fake_physical_device(int dev); /* of a valid CUdevice */
FAKEGPU_HIDDEN void fake_trim_pools(int dev);     /* what a synchronisation does to pools; -1: all */
FAKEGPU_HIDDEN void fake_count_launch(void);      /* for fakegpu_launches() */

/* fake_streams.c */
/* Queues kernel op on stream s (NULL: the legacy stream, or with ptsz the
 * calling thread's), after the host-side launch cost; on a capturing stream,
 * records it into the graph being captured instead. */
FAKEGPU_HIDDEN CUresult fake_stream_launch(CUstream s, int ptsz, const struct fake_op *op);
/* Waits for what s has queued, before something the fake does at once on
 * the host in the stream's order (a copy, a memset, a free).  A stream being
 * captured refuses (the fake captures kernels only). */
FAKEGPU_HIDDEN CUresult fake_stream_before_host_op(CUstream s, int ptsz);
/* A query or synchronisation (potentially unsafe during a stream capture):
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the captures it breaks
 * invalidated, where the calling thread's capture mode forbids it now. */
FAKEGPU_HIDDEN CUresult fake_capture_unsafe_call(void);
/* The device of a created stream, else the current context's; -1 if none. */
FAKEGPU_HIDDEN int fake_stream_device(CUstream s);

#endif /* FAKE_CUDA_H */
