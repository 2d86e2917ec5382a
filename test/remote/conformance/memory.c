/*
 * Memory: a pool of the program's (its attributes, int and 64-bit, and
 * which devices may access it), the device's graph memory attributes,
 * managed memory's advice, prefetches and discards and what its ranges say
 * of them, a pointer's attribute set and read back, batches of copies (1D,
 * and 3D between pointers and an array), a handle retained from a virtual
 * memory mapping, and a mipmapped array.
 */
#include "conformance.h"

#include <stdint.h>
#include <string.h>

static void pool(CUstream s)
{
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool p = NULL;
    SHOW("cuMemPoolCreate", F(cuMemPoolCreate)(&p, &props));
    int flag = -1;
    SHOW("cuMemPoolGetAttribute reuse follows events",
         F(cuMemPoolGetAttribute)(p, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, &flag));
    printf("reuse follows event dependencies at first: %d\n", flag);
    flag = 0;
    SHOW("cuMemPoolSetAttribute opportunistic reuse",
         F(cuMemPoolSetAttribute)(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &flag));
    flag = -1;
    SHOW("cuMemPoolGetAttribute opportunistic reuse",
         F(cuMemPoolGetAttribute)(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &flag));
    printf("opportunistic reuse set: %d\n", flag);
    cuuint64_t threshold = 1 << 20, got = 0;
    SHOW("cuMemPoolSetAttribute release threshold",
         F(cuMemPoolSetAttribute)(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    SHOW("cuMemPoolGetAttribute release threshold",
         F(cuMemPoolGetAttribute)(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &got));
    printf("release threshold set: %llu\n", (unsigned long long)got);
    /* A block freed is kept, below the threshold. */
    CUdeviceptr block = 0;
    SHOW("cuMemAllocFromPoolAsync", F(cuMemAllocFromPoolAsync)(&block, 4096, p, s));
    SHOW("cuMemFreeAsync", F(cuMemFreeAsync)(block, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    got = 0;
    SHOW("cuMemPoolGetAttribute reserved", F(cuMemPoolGetAttribute)(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &got));
    printf("pool's reserve after a block came back: %llu\n", (unsigned long long)got);
    CUmemAccessDesc access = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    SHOW("cuMemPoolSetAccess", F(cuMemPoolSetAccess)(p, &access, 1));
    CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    CUmemLocation where = { CU_MEM_LOCATION_TYPE_DEVICE, 0 };
    SHOW("cuMemPoolGetAccess", F(cuMemPoolGetAccess)(&flags, p, &where));
    printf("device 0's access to the pool: %d\n", (int)flags);
    int devices = 0;
    SHOW("cuDeviceGetCount", F(cuDeviceGetCount)(&devices));
    if (devices > 1) {
        where.id = 1;
        SHOW("cuMemPoolGetAccess device 1", F(cuMemPoolGetAccess)(&flags, p, &where));
        printf("device 1's access to the pool at first: %d\n", (int)flags);
        CUmemAccessDesc peer = { { CU_MEM_LOCATION_TYPE_DEVICE, 1 }, CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
        SHOW("cuMemPoolSetAccess device 1", F(cuMemPoolSetAccess)(p, &peer, 1));
        SHOW("cuMemPoolGetAccess device 1", F(cuMemPoolGetAccess)(&flags, p, &where));
        printf("device 1's access to the pool set: %d\n", (int)flags);
    }
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    TRY("cuMemPoolSetAccess taking the pool's own device's access", F(cuMemPoolSetAccess)(p, &access, 1));
    SHOW("cuMemPoolDestroy", F(cuMemPoolDestroy)(p));
}

static void graph_memory(void)
{
    cuuint64_t v = 99;
    SHOW("cuDeviceGetGraphMemAttribute used high",
         F(cuDeviceGetGraphMemAttribute)(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v));
    printf("graph memory used high: %llu\n", (unsigned long long)v);
    v = 0;
    SHOW("cuDeviceSetGraphMemAttribute used high",
         F(cuDeviceSetGraphMemAttribute)(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v));
    SHOW("cuDeviceSetGraphMemAttribute reserved high",
         F(cuDeviceSetGraphMemAttribute)(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &v));
    cuuint64_t high = 99, current = 98;
    SHOW("cuDeviceGetGraphMemAttribute reserved high",
         F(cuDeviceGetGraphMemAttribute)(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &high));
    SHOW("cuDeviceGetGraphMemAttribute reserved",
         F(cuDeviceGetGraphMemAttribute)(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &current));
    printf("graph memory reserved high after the reset is what is reserved: %s\n", high == current ? "yes" : "no");
    TRY("cuDeviceSetGraphMemAttribute used now",
        F(cuDeviceSetGraphMemAttribute)(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v));
    v = 5;
    TRY("cuDeviceSetGraphMemAttribute used high not to 0",
        F(cuDeviceSetGraphMemAttribute)(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v));
}

/* attr of [p, p+n), printed as ints. */
static void range(const char *what, CUdeviceptr p, size_t n, CUmem_range_attribute attr, int count)
{
    int v[4] = { 99, 99, 99, 99 };
    SHOW(what, F(cuMemRangeGetAttribute)(v, (size_t)count * sizeof(int), attr, p, n));
    printf("%s =", what);
    for (int i = 0; i < count; i++)
        printf(" %d", v[i]);
    printf("\n");
}

static void managed(CUstream s)
{
    enum { BYTES = 64 << 10, PAGE = 4096 };
    CUdeviceptr m = 0;
    CUmemLocation dev0 = { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, host = { CU_MEM_LOCATION_TYPE_HOST, 0 };
    SHOW("cuMemAllocManaged", F(cuMemAllocManaged)(&m, BYTES, CU_MEM_ATTACH_GLOBAL));
    unsigned is_managed = 9;
    SHOW("cuPointerGetAttribute is managed", F(cuPointerGetAttribute)(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
    printf("managed memory says it is managed: %u\n", is_managed);
    range("read mostly at first", m, BYTES, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, 1);
    SHOW("cuMemAdvise_v2 read mostly", F(cuMemAdvise_v2)(m, BYTES, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0));
    SHOW("cuMemAdvise_v2 preferred on the host",
         F(cuMemAdvise_v2)(m, BYTES / 2, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host));
    SHOW("cuMemAdvise_v2 accessed by device 0", F(cuMemAdvise_v2)(m, BYTES, CU_MEM_ADVISE_SET_ACCESSED_BY, dev0));
    SHOW("cuMemPrefetchAsync_v2 to device 0", F(cuMemPrefetchAsync_v2)(m, BYTES, dev0, 0, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    range("read mostly", m, BYTES, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, 1);
    range("preferred location of the whole", m, BYTES, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, 1);
    range("preferred location of the first half", m, BYTES / 2, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, 1);
    range("preferred location type of the first half", m, BYTES / 2, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, 1);
    range("accessed by", m, BYTES, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, 3);
    int mostly = 9, last = 9, type = 9, id = 9;
    void *data[] = { &mostly, &last, &type, &id };
    size_t sizes[] = { 4, 4, 4, 4 };
    CUmem_range_attribute attrs[] = { CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
                                      CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
                                      CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID };
    SHOW("cuMemRangeGetAttributes", F(cuMemRangeGetAttributes)(data, sizes, attrs, 4, m, BYTES));
    printf("read mostly %d, last prefetched to %d (type %d, id %d)\n", mostly, last, type, id);
    TRY("cuMemRangeGetAttribute of a short buffer",
        F(cuMemRangeGetAttribute)(&mostly, 2, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, BYTES));
    /* A page discarded, another prefetched to the host, by batches. */
    CUdeviceptr ptrs[2] = { m, m + 8 * PAGE };
    size_t lens[2] = { PAGE, PAGE };
    SHOW("cuMemDiscardBatchAsync", F(cuMemDiscardBatchAsync)(ptrs, lens, 2, 0, s));
    size_t first = 0;
    SHOW("cuMemPrefetchBatchAsync to the host",
         F(cuMemPrefetchBatchAsync)(ptrs + 1, lens + 1, 1, &host, &first, 1, 0, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    range("last prefetch of the page sent to the host", m + 8 * PAGE, PAGE,
          CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, 1);
    range("last prefetch of the whole", m, BYTES, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, 1);
    SHOW("cuMemFree_v2 managed", F(cuMemFree_v2)(m));
}

static void pointer_attribute(void)
{
    CUdeviceptr d = 0;
    unsigned v = 9;
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d, 4096));
    SHOW("cuPointerGetAttribute sync memops", F(cuPointerGetAttribute)(&v, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
    printf("sync memops at first: %u\n", v);
    unsigned on = 1;
    SHOW("cuPointerSetAttribute sync memops", F(cuPointerSetAttribute)(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d + 64));
    v = 9;
    SHOW("cuPointerGetAttribute sync memops", F(cuPointerGetAttribute)(&v, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
    printf("sync memops set: %u\n", v);
    TRY("cuPointerSetAttribute of another attribute", F(cuPointerSetAttribute)(&on, CU_POINTER_ATTRIBUTE_MAPPED, d));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(d));
}

/* Three copies of a batch, none reading what another writes (a batch's
 * copies may run in any order): host to device, device to device, device
 * to host. */
static void copy_batch(CUstream s)
{
    enum { N = 64 };
    unsigned char a[N], b[N], c[N], back[N];
    for (int i = 0; i < N; i++) {
        a[i] = (unsigned char)(i + 1);
        b[i] = (unsigned char)(200 - i);
        c[i] = (unsigned char)(i * 5);
    }
    CUdeviceptr d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d0, N));
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d1, N));
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d2, N));
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d3, N));
    SHOW("cuMemcpyHtoD_v2", F(cuMemcpyHtoD_v2)(d0, b, N));
    SHOW("cuMemcpyHtoD_v2", F(cuMemcpyHtoD_v2)(d3, c, N));
    unsigned char out[N];
    memset(out, 0, sizeof(out));
    CUdeviceptr dsts[3] = { d1, d2, (CUdeviceptr)(uintptr_t)out };
    CUdeviceptr srcs[3] = { (CUdeviceptr)(uintptr_t)a, d0, d3 };
    size_t sizes[3] = { N, N, N };
    CUmemcpyAttributes attr;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    size_t idx = 0;
    SHOW("cuMemcpyBatchAsync_v2", F(cuMemcpyBatchAsync_v2)(dsts, srcs, sizes, 3, &attr, &idx, 1, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(back, d1, N));
    printf("batch host to device: %s\n", memcmp(back, a, N) == 0 ? "match" : "differ");
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(back, d2, N));
    printf("batch device to device: %s\n", memcmp(back, b, N) == 0 ? "match" : "differ");
    printf("batch device to host: %s\n", memcmp(out, c, N) == 0 ? "match" : "differ");
    /* The first form, which says which copy failed: the second's runs past its allocation. */
    size_t fail = 7;
    SHOW("cuMemcpyBatchAsync", F(cuMemcpyBatchAsync)(dsts, srcs, sizes, 3, &attr, &idx, 1, &fail, s));
    printf("cuMemcpyBatchAsync's failed copy: %s\n", fail == SIZE_MAX ? "none" : "one");
    dsts[1] = d2 + N / 2;
    TRY("cuMemcpyBatchAsync past an allocation", F(cuMemcpyBatchAsync)(dsts, srcs, sizes, 3, &attr, &idx, 1, &fail, s));
    printf("cuMemcpyBatchAsync's failed copy: %zu\n", fail);
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    TRY("cuMemcpyBatchAsync_v2 on the legacy stream",
        F(cuMemcpyBatchAsync_v2)(dsts, srcs, sizes, 3, &attr, &idx, 1, NULL));
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    TRY("cuMemcpyBatchAsync_v2 with no access order",
        F(cuMemcpyBatchAsync_v2)(dsts, srcs, sizes, 3, &attr, &idx, 1, s));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(d0));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(d1));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(d2));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(d3));
}

static CUmemcpy3DOperand pointer_operand(CUdeviceptr p)
{
    CUmemcpy3DOperand o;
    memset(&o, 0, sizeof(o));
    o.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    o.op.ptr.ptr = p;
    return o;
}

static CUmemcpy3DOperand array_operand(CUarray a)
{
    CUmemcpy3DOperand o;
    memset(&o, 0, sizeof(o));
    o.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
    o.op.array.array = a;
    return o;
}

/* Host memory into a 2D array by one batch; the array into device memory
 * and host memory by another. */
static void copy_batch_3d(CUstream s)
{
    enum { W = 8, H = 4 };
    float in[H][W], out[H][W], dev_out[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            in[y][x] = (float)(y * 100 + x);
    CUarray a = NULL;
    CUDA_ARRAY3D_DESCRIPTOR desc = { .Width = W, .Height = H, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 };
    CUdeviceptr d = 0;
    SHOW("cuArray3DCreate_v2", F(cuArray3DCreate_v2)(&a, &desc));
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&d, sizeof(in)));
    CUDA_MEMCPY3D_BATCH_OP to_array;
    memset(&to_array, 0, sizeof(to_array));
    to_array.src = pointer_operand((CUdeviceptr)(uintptr_t)in);
    to_array.dst = array_operand(a);
    to_array.extent = (CUextent3D){ W, H, 1 };
    to_array.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    SHOW("cuMemcpy3DBatchAsync_v2 host to array", F(cuMemcpy3DBatchAsync_v2)(1, &to_array, 0, s));
    CUDA_MEMCPY3D_BATCH_OP from_array[2];
    memset(from_array, 0, sizeof(from_array));
    from_array[0].src = array_operand(a);
    from_array[0].dst = pointer_operand(d);
    from_array[1].src = array_operand(a);
    from_array[1].dst = pointer_operand((CUdeviceptr)(uintptr_t)out);
    for (int i = 0; i < 2; i++) {
        from_array[i].extent = (CUextent3D){ W, H, 1 };
        from_array[i].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    }
    memset(out, 0, sizeof(out));
    SHOW("cuMemcpy3DBatchAsync_v2 array to device and host", F(cuMemcpy3DBatchAsync_v2)(2, from_array, 0, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    memset(dev_out, 0, sizeof(dev_out));
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(dev_out, d, sizeof(dev_out)));
    printf("3D batch through the array to the host: %s, to the device: %s (last %g)\n",
           memcmp(out, in, sizeof(in)) == 0 ? "match" : "differ",
           memcmp(dev_out, in, sizeof(in)) == 0 ? "match" : "differ", dev_out[H - 1][W - 1]);
    to_array.extent.width = 0;
    TRY("cuMemcpy3DBatchAsync_v2 of no width", F(cuMemcpy3DBatchAsync_v2)(1, &to_array, 0, s));
    to_array.extent.width = W;
    TRY("cuMemcpy3DBatchAsync_v2 with flags", F(cuMemcpy3DBatchAsync_v2)(1, &to_array, 1, s));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(d));
    SHOW("cuArrayDestroy", F(cuArrayDestroy)(a));
}

/* A mapping's handle, retained from its address, and its properties. */
static void retained_handle(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    SHOW("cuMemGetAllocationGranularity",
         F(cuMemGetAllocationGranularity)(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle mh = 0, kept = 0;
    CUmemAccessDesc access = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    SHOW("cuMemAddressReserve", F(cuMemAddressReserve)(&va, 2 * gran, 0, 0, 0));
    SHOW("cuMemCreate", F(cuMemCreate)(&mh, 2 * gran, &prop, 0));
    SHOW("cuMemMap", F(cuMemMap)(va, 2 * gran, 0, mh, 0));
    SHOW("cuMemSetAccess", F(cuMemSetAccess)(va, 2 * gran, &access, 1));
    SHOW("cuMemRetainAllocationHandle", F(cuMemRetainAllocationHandle)(&kept, (void *)(uintptr_t)(va + gran + 64)));
    printf("the retained handle is the mapped one: %s\n", kept == mh ? "yes" : "no");
    CUmemAllocationProp got;
    memset(&got, 0xff, sizeof(got));
    SHOW("cuMemGetAllocationPropertiesFromHandle", F(cuMemGetAllocationPropertiesFromHandle)(&got, kept));
    printf("its properties: type %d, location type %d id %d, handle types %d\n", (int)got.type, (int)got.location.type,
           got.location.id, (int)got.requestedHandleTypes);
    SHOW("cuMemRelease retained", F(cuMemRelease)(kept));
    SHOW("cuMemsetD32_v2 still mapped", F(cuMemsetD32_v2)(va, 0x5151, 4));
    unsigned word = 0;
    SHOW("cuMemcpyDtoH_v2 still mapped", F(cuMemcpyDtoH_v2)(&word, va, sizeof(word)));
    printf("mapped word after the retained handle's release: %x\n", word);
    CUmemGenericAllocationHandle none = 0;
    TRY("cuMemRetainAllocationHandle of memory not mapped",
        F(cuMemRetainAllocationHandle)(&none, (void *)(uintptr_t)(va + 4 * gran)));
    SHOW("cuMemUnmap", F(cuMemUnmap)(va, 2 * gran));
    SHOW("cuMemRelease", F(cuMemRelease)(mh));
    SHOW("cuMemAddressFree", F(cuMemAddressFree)(va, 2 * gran));
}

static void mipmapped_array(void)
{
    CUDA_ARRAY3D_DESCRIPTOR desc = { .Width = 64, .Height = 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4 };
    CUmipmappedArray m = NULL;
    SHOW("cuMipmappedArrayCreate", F(cuMipmappedArrayCreate)(&m, &desc, 4));
    printf("mipmapped array given: %s\n", m ? "yes" : "no");
    CUmipmappedArray none = NULL;
    TRY("cuMipmappedArrayCreate of no level", F(cuMipmappedArrayCreate)(&none, &desc, 0));
    SHOW("cuMipmappedArrayDestroy", F(cuMipmappedArrayDestroy)(m));
}

void conformance_memory(void)
{
    CUstream s = NULL;
    SHOW("cuStreamCreate", F(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING));
    pool(s);
    graph_memory();
    managed(s);
    pointer_attribute();
    copy_batch(s);
    copy_batch_3d(s);
    retained_handle();
    mipmapped_array();
    SHOW("cuStreamDestroy_v2", F(cuStreamDestroy_v2)(s));
}
