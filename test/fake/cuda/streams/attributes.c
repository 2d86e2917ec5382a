/*
 * Streams' attributes (cuStreamSetAttribute, cuStreamGetAttribute): those a
 * stream has, kept as they were set: its synchronization policy, its
 * priority (the stream's own, clamped to the device's range as
 * cuStreamCreateWithPriority clamps it), its memory synchronization domain
 * and domain map, and its access policy window (zeros until set, but the
 * policy's default, CU_SYNC_POLICY_AUTO).  An attribute of launches
 * alone (a cluster's shape, cooperative, ...) is CUDA_ERROR_INVALID_VALUE,
 * as the driver answers it on a stream.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <string.h>

/* The device's range of stream priorities (an H100's): 0 the least, -5 the greatest. */
#define LEAST_PRIORITY 0
#define GREATEST_PRIORITY (-5)

/* Where st keeps attribute attr, or NULL for one streams do not have. */
static CUlaunchAttributeValue *kept(struct CUstream_st *st, CUstreamAttrID attr)
{
    switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY: return &st->sync_policy;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: return &st->mem_sync_domain;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: return &st->mem_sync_domain_map;
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: return &st->access_policy_window;
    default: return NULL;
    }
}

static CUresult set_attribute(int ptsz, CUstream s, CUstreamAttrID attr, const CUstreamAttrValue *value)
{
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_LAUNCH_ATTRIBUTE_PRIORITY) {
        int p = value->priority;
        st->priority = p > LEAST_PRIORITY ? LEAST_PRIORITY : p < GREATEST_PRIORITY ? GREATEST_PRIORITY : p;
        return CUDA_SUCCESS;
    }
    CUlaunchAttributeValue *v = kept(st, attr);
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY &&
        (value->syncPolicy < CU_SYNC_POLICY_AUTO || value->syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC))
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN && value->memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT &&
        value->memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW &&
        (value->accessPolicyWindow.hitRatio < 0.0f || value->accessPolicyWindow.hitRatio > 1.0f))
        return CUDA_ERROR_INVALID_VALUE;
    *v = *value;
    return CUDA_SUCCESS;
}

static CUresult get_attribute(int ptsz, CUstream s, CUstreamAttrID attr, CUstreamAttrValue *value)
{
    struct CUstream_st *st = fake_stream_of(s, ptsz);
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_LAUNCH_ATTRIBUTE_PRIORITY) {
        memset(value, 0, sizeof(*value));
        value->priority = st->priority;
        return CUDA_SUCCESS;
    }
    CUlaunchAttributeValue *v = kept(st, attr);
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *value = *v;
    if (attr == CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY && !value->syncPolicy)
        value->syncPolicy = CU_SYNC_POLICY_AUTO; /* never set: the default */
    return CUDA_SUCCESS;
}

WITH_PTSZ(cuStreamSetAttribute, set_attribute, (CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue *value),
          hStream, attr, value)
WITH_PTSZ(cuStreamGetAttribute, get_attribute, (CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue *value_out),
          hStream, attr, value_out)
