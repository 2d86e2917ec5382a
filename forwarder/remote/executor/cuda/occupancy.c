/*
 * The block size that gives a kernel the most occupancy, the executor's
 * side (the guest's: forwarder/remote/guest/cuda/occupancy.c; the messages:
 * forwarder/remote/spec/cuda.remote).  The guest's blockSizeToDynamicSMemSize
 * came as a table of its answers; the driver is given a function that
 * looks them up (a block size the guest was not asked about needs none).
 */
#include "forwarder/remote/executor/cuda/calls.h"

/* The table of the call being served: the executor serves one call at a
 * time on each thread, so each thread's is its own. */
static __thread const struct vgpu_in_cuOccupancyMaxPotentialBlockSizeWithFlags *serving;

static size_t shared_bytes(int block)
{
    for (uint32_t i = 0; serving && i < serving->count; i++)
        if (serving->blockSizes[i] == (uint32_t)block)
            return (size_t)serving->sharedBytes[i];
    return 0;
}

static int potential_block_size(struct vgpu_exec *x, void *fn,
                                const struct vgpu_in_cuOccupancyMaxPotentialBlockSizeWithFlags *in, bool with_flags)
{
    struct vgpu_out_cuOccupancyMaxPotentialBlockSizeWithFlags out = { 0 };
    CUoccupancyB2DSize table = in->count ? shared_bytes : NULL;
    serving = in;
    int r =
        with_flags
            ? ((CUresult(*)(int *, int *, CUfunction, CUoccupancyB2DSize, size_t, int, unsigned))fn)(
                  &out.minGridSize, &out.blockSize, in->func, table, in->dynamicSMemSize, in->blockSizeLimit, in->flags)
            : ((CUresult(*)(int *, int *, CUfunction, CUoccupancyB2DSize, size_t, int))fn)(
                  &out.minGridSize, &out.blockSize, in->func, table, in->dynamicSMemSize, in->blockSizeLimit);
    serving = NULL;
    return vgpu_exec_reply_cuOccupancyMaxPotentialBlockSizeWithFlags(x, r, in, &out);
}

int vgpu_exec_cuOccupancyMaxPotentialBlockSize(struct vgpu_exec *x, void *fn,
                                               const struct vgpu_in_cuOccupancyMaxPotentialBlockSizeWithFlags *in)
{
    if (in->flags)
        return vgpu_exec_malformed("cuOccupancyMaxPotentialBlockSize", 0);
    return potential_block_size(x, fn, in, false);
}

int vgpu_exec_cuOccupancyMaxPotentialBlockSizeWithFlags(
    struct vgpu_exec *x, void *fn, const struct vgpu_in_cuOccupancyMaxPotentialBlockSizeWithFlags *in)
{
    return potential_block_size(x, fn, in, true);
}
