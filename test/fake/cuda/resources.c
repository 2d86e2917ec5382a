/*
 * Devices' resources for green contexts: a device's SMs
 * (cuDeviceGetDevResource) and their split into groups
 * (cuDevSmResourceSplitByCount), as a Hopper splits them: groups of at
 * least 8 SMs, a multiple of 8 (of 2 when the split ignores SM
 * co-scheduling), as many as the input holds, the SMs left over in the
 * remainder.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <string.h>

#define MIN_PARTITION 8
#define ALIGNMENT 8
#define MIN_PARTITION_IGNORING_COSCHEDULING 2

static CUdevResource sm_resource(unsigned sms, unsigned min_partition, unsigned alignment)
{
    CUdevResource r;
    memset(&r, 0, sizeof(r));
    r.type = CU_DEV_RESOURCE_TYPE_SM;
    r.sm.smCount = sms;
    r.sm.minSmPartitionSize = min_partition;
    r.sm.smCoscheduledAlignment = alignment;
    return r;
}

CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource, CUdevResourceType type)
{
    ENTER();
    if (!fake_valid_device(device))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!resource)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    *resource = sm_resource(SM_COUNT, MIN_PARTITION, ALIGNMENT);
    return CUDA_SUCCESS;
}

/* Groups of minCount SMs (rounded up to the granularity; 0: the least),
 * into result where it has room (*nbGroups of them), else only counted. */
CUresult cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups, const CUdevResource *input,
                                     CUdevResource *remaining, unsigned int useFlags, unsigned int minCount)
{
    ENTER();
    if (!nbGroups || !input || (result && *nbGroups == 0) ||
        (useFlags & ~(unsigned)(CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING |
                                CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE)))
        return CUDA_ERROR_INVALID_VALUE;
    if (input->type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    unsigned sms = input->sm.smCount;
    if (minCount > sms)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    int ignoring = useFlags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING;
    unsigned grain = ignoring ? MIN_PARTITION_IGNORING_COSCHEDULING : ALIGNMENT;
    unsigned size = minCount ? (minCount + grain - 1) / grain * grain : grain;
    if (size < (ignoring ? MIN_PARTITION_IGNORING_COSCHEDULING : MIN_PARTITION))
        size = ignoring ? MIN_PARTITION_IGNORING_COSCHEDULING : MIN_PARTITION;
    unsigned groups = size <= sms ? sms / size : 0;
    if (result && groups > *nbGroups)
        groups = *nbGroups;
    for (unsigned i = 0; result && i < groups; i++)
        result[i] = sm_resource(size, grain, grain);
    if (remaining)
        *remaining = sm_resource(sms - groups * size, grain, grain);
    *nbGroups = groups;
    return CUDA_SUCCESS;
}
