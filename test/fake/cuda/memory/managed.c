/*
 * Managed memory (cuMemAllocManaged, device_memory.c): what the program
 * said of its pages (cuMemAdvise: read mostly, a preferred location, the
 * processors that access it) and where it last prefetched them
 * (cuMemPrefetchAsync, cuMemPrefetchBatchAsync), as cuMemRangeGetAttribute
 * reports them; and discards (cuMemDiscardBatchAsync), after which the
 * range reads as zeros.  Its bytes are host memory like every device
 * allocation's, so no page moves: a prefetch is what it records.
 *
 * As the driver, ranges are rounded out to whole CPU pages (4 KiB here) and
 * must lie in one managed allocation (else CUDA_ERROR_INVALID_VALUE); a
 * location is a device or the host (a host NUMA node counts as the host);
 * stream-ordered calls are done after the stream's work, as the fake's
 * copies are, and the batches refuse the legacy NULL stream.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096u
#define HOST_BIT (1u << 31) /* the CPU, in a page's accessed_by */

/* A page's state; zeros are the state of a page never advised nor
 * prefetched.  A location is stored as its CUdevice + 2 (CU_DEVICE_CPU is
 * 1, CU_DEVICE_INVALID 0: none). */
struct page {
    signed char preferred, prefetched;
    unsigned char read_mostly;
    uint32_t accessed_by; /* bit d: device d; HOST_BIT: the CPU */
};

struct managed {
    size_t npages;
    struct page *pages; /* made at the first advice or prefetch */
};

struct managed *fake_managed_new(size_t size)
{
    struct managed *m = calloc(1, sizeof(*m));
    if (m)
        m->npages = (size + PAGE - 1) / PAGE;
    return m;
}

void fake_managed_free(struct managed *m)
{
    if (m)
        free(m->pages);
    free(m);
}

/* ---- ranges and locations ---- */

/* The pages [*first, *end) of the managed allocation holding [p, p+n),
 * with fake_lock held (the caller unlocks); NULL when there is none, or
 * (make) when its pages cannot be made. */
static struct managed *pages_of_locked(CUdeviceptr p, size_t n, int make, size_t *first, size_t *end)
{
    if (!p || n == 0)
        return NULL;
    struct alloc *a = fake_find_containing_locked((uintptr_t)p, n, 1u << A_DEVICE);
    if (!a || !a->managed)
        return NULL;
    struct managed *m = a->managed;
    if (make && !m->pages && !(m->pages = calloc(m->npages, sizeof(*m->pages))))
        return NULL;
    *first = ((uintptr_t)p - a->base) / PAGE;
    *end = ((uintptr_t)p - a->base + n + PAGE - 1) / PAGE;
    return m;
}

/* A location as a CUdevice (CU_DEVICE_CPU for the host's); 1 when it is one. */
static int device_of(CUmemLocation l, CUdevice *d)
{
    switch (l.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: *d = l.id; return fake_valid_device(l.id);
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: *d = CU_DEVICE_CPU; return 1;
    default: return 0;
    }
}

static CUresult location_error(CUmemLocation l)
{
    return l.type == CU_MEM_LOCATION_TYPE_DEVICE ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_INVALID_VALUE;
}

/* ---- advice ---- */

static CUresult advise(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation where)
{
    CUdevice d = CU_DEVICE_INVALID;
    int located = device_of(where, &d);
    int needs_location = advice != CU_MEM_ADVISE_SET_READ_MOSTLY && advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY &&
                         advice != CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION;
    if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
        return CUDA_ERROR_INVALID_VALUE;
    if (needs_location && !located)
        return location_error(where);
    uint32_t bit = d == CU_DEVICE_CPU ? HOST_BIT : 1u << (d & 31);
    size_t first, end;
    LOCK();
    struct managed *m = pages_of_locked(p, n, 1, &first, &end);
    for (size_t i = first; m && i < end; i++) {
        struct page *pg = &m->pages[i];
        switch (advice) {
        case CU_MEM_ADVISE_SET_READ_MOSTLY: pg->read_mostly = 1; break;
        case CU_MEM_ADVISE_UNSET_READ_MOSTLY: pg->read_mostly = 0; break;
        case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: pg->preferred = (signed char)(d + 2); break;
        case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: pg->preferred = 0; break;
        case CU_MEM_ADVISE_SET_ACCESSED_BY: pg->accessed_by |= bit; break;
        default: pg->accessed_by &= ~bit; break;
        }
    }
    UNLOCK();
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
    ENTER();
    return advise(devPtr, count, advice, location);
}

/* CUDA 8's form: a device, or CU_DEVICE_CPU. */
CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)
{
    ENTER();
    CUmemLocation l = { device == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE, device };
    return advise(devPtr, count, advice, l);
}

/* ---- prefetches and discards ---- */

/* Records a prefetch of [p, p+n) to d, after the stream's work. */
static CUresult prefetch(int ptsz, CUdeviceptr p, size_t n, CUmemLocation where, unsigned flags, CUstream s)
{
    CUdevice d;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!device_of(where, &d))
        return location_error(where);
    size_t first, end;
    LOCK();
    struct managed *m = pages_of_locked(p, n, 1, &first, &end);
    UNLOCK();
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    if (rc != CUDA_SUCCESS)
        return rc;
    LOCK();
    for (size_t i = first; i < end; i++)
        m->pages[i].prefetched = (signed char)(d + 2);
    UNLOCK();
    return CUDA_SUCCESS;
}

WITH_PTSZ(cuMemPrefetchAsync_v2, prefetch,
          (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream hStream), devPtr,
          count, location, flags, hStream)

static CUresult prefetch_to_device(int ptsz, CUdeviceptr p, size_t n, CUdevice d, CUstream s)
{
    CUmemLocation l = { d == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE, d };
    return prefetch(ptsz, p, n, l, 0, s);
}

WITH_PTSZ(cuMemPrefetchAsync, prefetch_to_device,
          (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream), devPtr, count, dstDevice, hStream)

/* A batch's ranges: each in a managed allocation; its locations (where
 * given), each index within the batch, rising from 0. */
static CUresult batch_ok(int ptsz, CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *locs, size_t *idxs,
                         size_t nlocs, int prefetching, unsigned long long flags, CUstream s)
{
    if (!fake_stream_of(s, ptsz))
        return CUDA_ERROR_INVALID_HANDLE;
    if (count == 0 || !dptrs || !sizes || flags != 0 || s == CU_STREAM_LEGACY || (!s && !ptsz))
        return CUDA_ERROR_INVALID_VALUE;
    if (prefetching && (nlocs == 0 || nlocs > count || !locs || !idxs || idxs[0] != 0))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; prefetching && i < nlocs; i++) {
        CUdevice d;
        if (idxs[i] >= count || (i && idxs[i] <= idxs[i - 1]))
            return CUDA_ERROR_INVALID_VALUE;
        if (!device_of(locs[i], &d))
            return location_error(locs[i]);
    }
    for (size_t i = 0; i < count; i++) {
        size_t first, end;
        LOCK();
        struct managed *m = pages_of_locked(dptrs[i], sizes[i], 1, &first, &end);
        UNLOCK();
        if (!m)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* The batch's discards (zeros where the ranges were), then its prefetches. */
static CUresult discard_and_prefetch(int ptsz, int discarding, CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                     CUmemLocation *locs, size_t *idxs, size_t nlocs, unsigned long long flags,
                                     CUstream s)
{
    CUresult rc = batch_ok(ptsz, dptrs, sizes, count, locs, idxs, nlocs, locs != NULL || !discarding, flags, s);
    if (rc == CUDA_SUCCESS)
        rc = fake_stream_before_host_op(s, ptsz);
    for (size_t i = 0; rc == CUDA_SUCCESS && discarding && i < count; i++)
        memset((void *)(uintptr_t)dptrs[i], 0, sizes[i]);
    for (size_t i = 0, k = 0; rc == CUDA_SUCCESS && locs && i < count; i++) {
        while (k + 1 < nlocs && idxs[k + 1] <= i)
            k++;
        CUdevice d = CU_DEVICE_CPU;
        device_of(locs[k], &d);
        size_t first, end;
        LOCK();
        struct managed *m = pages_of_locked(dptrs[i], sizes[i], 1, &first, &end);
        for (size_t p = first; m && p < end; p++)
            m->pages[p].prefetched = (signed char)(d + 2);
        UNLOCK();
    }
    return rc;
}

static CUresult discard_batch(int ptsz, CUdeviceptr *dptrs, size_t *sizes, size_t count, unsigned long long flags,
                              CUstream s)
{
    return discard_and_prefetch(ptsz, 1, dptrs, sizes, count, NULL, NULL, 0, flags, s);
}

static CUresult prefetch_batch(int ptsz, CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *locs,
                               size_t *idxs, size_t nlocs, unsigned long long flags, CUstream s)
{
    return discard_and_prefetch(ptsz, 0, dptrs, sizes, count, locs, idxs, nlocs, flags, s);
}

static CUresult discard_and_prefetch_batch(int ptsz, CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                           CUmemLocation *locs, size_t *idxs, size_t nlocs, unsigned long long flags,
                                           CUstream s)
{
    if (!locs)
        return CUDA_ERROR_INVALID_VALUE;
    return discard_and_prefetch(ptsz, 1, dptrs, sizes, count, locs, idxs, nlocs, flags, s);
}

WITH_PTSZ(cuMemDiscardBatchAsync, discard_batch,
          (CUdeviceptr * dptrs, size_t *sizes, size_t count, unsigned long long flags, CUstream hStream), dptrs, sizes,
          count, flags, hStream)
WITH_PTSZ(cuMemPrefetchBatchAsync, prefetch_batch,
          (CUdeviceptr * dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
           size_t numPrefetchLocs, unsigned long long flags, CUstream hStream),
          dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream)
WITH_PTSZ(cuMemDiscardAndPrefetchBatchAsync, discard_and_prefetch_batch,
          (CUdeviceptr * dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
           size_t numPrefetchLocs, unsigned long long flags, CUstream hStream),
          dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream)

/* ---- what the range's pages say ---- */

/* The location every page of [first, end) holds as preferred (else the
 * last prefetch's), or CU_DEVICE_INVALID where they differ or hold none. */
static CUdevice common_location(const struct managed *m, size_t first, size_t end, int preferred)
{
    if (!m->pages)
        return CU_DEVICE_INVALID;
    int v = preferred ? m->pages[first].preferred : m->pages[first].prefetched;
    for (size_t i = first; i < end; i++)
        if ((preferred ? m->pages[i].preferred : m->pages[i].prefetched) != v)
            return CU_DEVICE_INVALID;
    return v - 2;
}

static CUresult range_attribute(void *data, size_t size, CUmem_range_attribute attr, CUdeviceptr p, size_t n)
{
    if (!data || size == 0 || size % 4 != 0 || (attr != CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY && size != 4))
        return CUDA_ERROR_INVALID_VALUE;
    int32_t *out = data;
    size_t first, end;
    LOCK();
    struct managed *m = pages_of_locked(p, n, 0, &first, &end);
    CUresult rc = m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (m) {
        uint32_t all = ~0u;
        int read_mostly = m->pages != NULL;
        for (size_t i = first; i < end; i++) {
            all &= m->pages ? m->pages[i].accessed_by : 0;
            read_mostly = read_mostly && m->pages[i].read_mostly;
        }
        CUdevice preferred = common_location(m, first, end, 1), prefetched = common_location(m, first, end, 0);
        switch (attr) {
        case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: *out = read_mostly; break;
        case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION: *out = preferred; break;
        case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION: *out = prefetched; break;
        case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
        case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE: {
            CUdevice d = attr == CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE ? preferred : prefetched;
            *out = d >= 0               ? CU_MEM_LOCATION_TYPE_DEVICE
                   : d == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST
                                        : CU_MEM_LOCATION_TYPE_INVALID;
            break;
        }
        case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID: *out = preferred; break;
        case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID: *out = prefetched; break;
        case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
            size_t k = 0, room = size / 4;
            for (int d = 0; d < fake_device_count() && k < room; d++)
                if (all & (1u << d))
                    out[k++] = d;
            if (all & HOST_BIT && k < room)
                out[k++] = CU_DEVICE_CPU;
            while (k < room)
                out[k++] = CU_DEVICE_INVALID;
            break;
        }
        default: rc = CUDA_ERROR_INVALID_VALUE; break;
        }
    }
    UNLOCK();
    return rc;
}

CUresult cuMemRangeGetAttribute(void *data, size_t dataSize, CUmem_range_attribute attribute, CUdeviceptr devPtr,
                                size_t count)
{
    ENTER();
    return range_attribute(data, dataSize, attribute, devPtr, count);
}

CUresult cuMemRangeGetAttributes(void **data, size_t *dataSizes, CUmem_range_attribute *attributes,
                                 size_t numAttributes, CUdeviceptr devPtr, size_t count)
{
    ENTER();
    if (!data || !dataSizes || !attributes || numAttributes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < numAttributes; i++) {
        CUresult rc = range_attribute(data[i], dataSizes[i], attributes[i], devPtr, count);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}
