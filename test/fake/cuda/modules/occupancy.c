/*
 * Occupancy: how many blocks of a kernel an SM holds at once, the block
 * size that holds the most threads (cuOccupancyMaxPotentialBlockSize), and
 * clusters (cuOccupancyMaxPotentialClusterSize, cuOccupancyMaxActiveClusters),
 * on a device shaped as an H100: 2048 threads and 32 blocks an SM, 1024
 * threads a block, 228 KiB of shared memory an SM of which each block takes
 * 1 KiB besides its own, 48 KiB of dynamic shared memory a block (the
 * fake's kernels never opt in to more), 8 GPCs of 16 SMs that clusters
 * lie in, clusters of 8 blocks at most (the portable size).  The fake's
 * kernels use no static shared memory and few registers, which never limit
 * them.
 *
 * The block size search is cuda_occupancy.h's, as the driver's: from the
 * largest block (the limit, else 1024) down by warps, each size asked of
 * blockSizeToDynamicSMemSize where it is given, the first size holding the
 * most threads kept, stopping once an SM is full.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#define WARP 32
#define MAX_BLOCK 1024
#define BLOCKS_PER_SM 32
#define SHARED_PER_SM (228u << 10)
#define SHARED_RESERVED 1024u
#define SHARED_PER_BLOCK (48u << 10)
#define GPCS 8
#define SMS_PER_GPC 16
#define PORTABLE_CLUSTER 8

/* Blocks of block threads and shared bytes of dynamic shared memory an SM holds. */
static int blocks_per_sm(int block, size_t shared)
{
    if (block <= 0 || block > MAX_BLOCK || shared > SHARED_PER_BLOCK)
        return 0;
    int warps = (block + WARP - 1) / WARP;
    int by_threads = THREADS_PER_SM / (warps * WARP);
    int by_shared = (int)(SHARED_PER_SM / (shared + SHARED_RESERVED));
    int n = by_threads < by_shared ? by_threads : by_shared;
    return n < BLOCKS_PER_SM ? n : BLOCKS_PER_SM;
}

/* A kernel in a context: CUDA_SUCCESS, or why not. */
static CUresult kernel_ok(CUfunction f)
{
    if (!fake_kernel_of(f))
        return CUDA_ERROR_INVALID_HANDLE;
    return fake_current_device() < 0 ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

static CUresult active_blocks(int *numBlocks, CUfunction f, int block, size_t shared, unsigned flags)
{
    if (!numBlocks || block <= 0 || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = kernel_ok(f);
    if (rc == CUDA_SUCCESS)
        *numBlocks = blocks_per_sm(block, shared);
    return rc;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                     size_t dynamicSMemSize)
{
    ENTER();
    return active_blocks(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func, int blockSize,
                                                              size_t dynamicSMemSize, unsigned int flags)
{
    ENTER();
    return active_blocks(numBlocks, func, blockSize, dynamicSMemSize, flags);
}

static CUresult potential_block_size(int *minGridSize, int *blockSize, CUfunction f, CUoccupancyB2DSize shared_of,
                                     size_t shared, int limit, unsigned flags)
{
    if (!minGridSize || !blockSize || limit < 0 || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = kernel_ok(f);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (limit == 0 || limit > MAX_BLOCK)
        limit = MAX_BLOCK;
    int best = 0, best_blocks = 0, most = 0;
    for (int aligned = (limit + WARP - 1) / WARP * WARP; aligned > 0; aligned -= WARP) {
        int block = aligned < limit ? aligned : limit;
        int blocks = blocks_per_sm(block, shared_of ? shared_of(block) : shared);
        if (block * blocks > most) {
            best = block;
            best_blocks = blocks;
            most = block * blocks;
        }
        if (most == THREADS_PER_SM)
            break;
    }
    *minGridSize = best_blocks * SM_COUNT;
    *blockSize = best;
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                          CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
                                          int blockSizeLimit)
{
    ENTER();
    return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
                                blockSizeLimit, 0);
}

CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction func,
                                                   CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                   size_t dynamicSMemSize, int blockSizeLimit, unsigned int flags)
{
    ENTER();
    return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
                                blockSizeLimit, flags);
}

/* The blocks of config's shape an SM holds (the cluster's size in *cluster
 * where config gives one, else 0); an error for a shape that is none. */
static CUresult launch_shape(const CUlaunchConfig *config, CUfunction f, int *blocks, unsigned *cluster)
{
    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = kernel_ok(f);
    if (rc != CUDA_SUCCESS)
        return rc;
    unsigned long long threads = (unsigned long long)config->blockDimX * config->blockDimY * config->blockDimZ;
    if (threads == 0 || threads > MAX_BLOCK || !config->gridDimX || !config->gridDimY || !config->gridDimZ)
        return CUDA_ERROR_INVALID_VALUE;
    *cluster = 0;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            *cluster = config->attrs[i].value.clusterDim.x * config->attrs[i].value.clusterDim.y *
                       config->attrs[i].value.clusterDim.z;
    *blocks = blocks_per_sm((int)threads, config->sharedMemBytes);
    return CUDA_SUCCESS;
}

/* The cluster dimensions in config are ignored; the fake's kernels require
 * none and allow no size past the portable one. */
CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func, const CUlaunchConfig *config)
{
    ENTER();
    int blocks;
    unsigned cluster;
    if (!clusterSize)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = launch_shape(config, func, &blocks, &cluster);
    if (rc == CUDA_SUCCESS)
        *clusterSize = blocks ? PORTABLE_CLUSTER : 0;
    return rc;
}

/* Clusters of config's size, each within a GPC. */
CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
    ENTER();
    int blocks;
    unsigned cluster;
    if (!numClusters)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = launch_shape(config, func, &blocks, &cluster);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (cluster == 0)
        return CUDA_ERROR_INVALID_VALUE; /* the cluster's size must be given */
    if (cluster > PORTABLE_CLUSTER)
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    *numClusters = GPCS * (SMS_PER_GPC * blocks / (int)cluster);
    return CUDA_SUCCESS;
}
