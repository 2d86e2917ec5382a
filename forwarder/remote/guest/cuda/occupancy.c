/*
 * The block size that gives a kernel the most occupancy
 * (cuOccupancyMaxPotentialBlockSize and its WithFlags form), the guest's
 * side (forwarder/remote/executor/cuda/occupancy.c is the other; the
 * messages: forwarder/remote/spec/cuda.remote).  The caller's
 * blockSizeToDynamicSMemSize is the guest's code: it is asked here, once
 * for each block size the driver may try (every multiple of 32 up to
 * 1024, and a limit between them), and its answers cross with the call.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#define SLOT(name) VGPU_CUDA_SLOT_##name
#define MAX_BLOCK 1024 /* threads a block: no device has more */
#define WARP 32

static CUresult potential_block_size(unsigned slot, int *minGridSize, int *blockSize, CUfunction f,
                                     CUoccupancyB2DSize shared, size_t dynamicSMemSize, int limit, unsigned flags)
{
    if (!minGridSize || !blockSize)
        return CUDA_ERROR_INVALID_VALUE;
    uint32_t sizes[VGPU_IN_cuOccupancyMaxPotentialBlockSizeWithFlags_count_MAX];
    uint64_t bytes[VGPU_IN_cuOccupancyMaxPotentialBlockSizeWithFlags_count_MAX];
    uint32_t n = 0;
    if (shared) {
        for (int b = WARP; b <= MAX_BLOCK; b += WARP)
            sizes[n++] = (uint32_t)b;
        if (limit > 0 && limit < MAX_BLOCK && limit % WARP)
            sizes[n++] = (uint32_t)limit;
        for (uint32_t i = 0; i < n; i++)
            bytes[i] = shared((int)sizes[i]);
    }
    struct vgpu_in_cuOccupancyMaxPotentialBlockSizeWithFlags in = {
        .func = f,
        .dynamicSMemSize = dynamicSMemSize,
        .blockSizeLimit = limit,
        .flags = flags,
        .count = n,
        .blockSizes = sizes,
        .sharedBytes = bytes,
    };
    struct vgpu_out_cuOccupancyMaxPotentialBlockSizeWithFlags out = { 0 };
    CUresult r = (CUresult)vgpu_remote_call_cuOccupancyMaxPotentialBlockSizeWithFlags(slot, 0, &in, &out);
    if (r == CUDA_SUCCESS) {
        *minGridSize = out.minGridSize;
        *blockSize = out.blockSize;
    }
    return r;
}

CUresult vgpu_remote_guest_cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction f,
                                                            CUoccupancyB2DSize shared, size_t dynamicSMemSize,
                                                            int blockSizeLimit)
{
    return potential_block_size(SLOT(cuOccupancyMaxPotentialBlockSize), minGridSize, blockSize, f, shared,
                                dynamicSMemSize, blockSizeLimit, 0);
}

CUresult vgpu_remote_guest_cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction f,
                                                                     CUoccupancyB2DSize shared, size_t dynamicSMemSize,
                                                                     int blockSizeLimit, unsigned int flags)
{
    return potential_block_size(SLOT(cuOccupancyMaxPotentialBlockSizeWithFlags), minGridSize, blockSize, f, shared,
                                dynamicSMemSize, blockSizeLimit, flags);
}
