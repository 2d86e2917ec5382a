/*
 * Batches of memory operations on a stream (cuStreamBatchMemOp and its _v2
 * and per-thread forms): writes of 32- and 64-bit values, waits for a value,
 * barriers and flushes, in the order of the array, after the stream's
 * earlier work.
 *
 * As the fake's copies are, they are done by the host when called, once the
 * stream's work before them is done (../copies/copies.c): a write writes the
 * word then, and a wait whose condition holds then is passed.  A wait whose
 * condition does not hold then would hold the stream until some other work
 * wrote the word, which a stream done on the host at once cannot model: it
 * is CUDA_ERROR_NOT_SUPPORTED, the batch done up to it.  Every operation is
 * checked before any is done: a word of device memory, aligned to its
 * size; flags the operation knows (a write without a memory barrier only in
 * the first form, as the driver's _v2 refuses it).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <string.h>

#define MAX_OPS 256

static int word_ok(CUdeviceptr address, size_t size)
{
    return address % size == 0 && fake_range_ok(address, size);
}

static int op_ok(const CUstreamBatchMemOpParams *op, int v2)
{
    switch (op->operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        return word_ok(op->waitValue.address, op->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? 4 : 8) &&
               (op->waitValue.flags & ~(unsigned)CU_STREAM_WAIT_VALUE_FLUSH) <= CU_STREAM_WAIT_VALUE_NOR;
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        return word_ok(op->writeValue.address, op->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? 4 : 8) &&
               (op->writeValue.flags == CU_STREAM_WRITE_VALUE_DEFAULT ||
                (!v2 && op->writeValue.flags == CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
    case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES: return op->flushRemoteWrites.flags == 0;
    case CU_STREAM_MEM_OP_BARRIER: return op->memoryBarrier.flags <= 1; /* the system's scope, or the GPU's */
    default: return 0;
    }
}

/* Whether a wait's condition holds for the word now there. */
static int wait_holds(const CUstreamBatchMemOpParams *op)
{
    int wide = op->operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
    const void *at = (const void *)(uintptr_t)op->waitValue.address;
    uint64_t word, value = wide ? op->waitValue.value64 : op->waitValue.value;
    if (wide) {
        word = __atomic_load_n((const uint64_t *)at, __ATOMIC_ACQUIRE);
    } else {
        word = __atomic_load_n((const uint32_t *)at, __ATOMIC_ACQUIRE);
    }
    switch (op->waitValue.flags & ~(unsigned)CU_STREAM_WAIT_VALUE_FLUSH) {
    case CU_STREAM_WAIT_VALUE_GEQ: /* cyclic: ignores wrapping round */
        return wide ? (int64_t)(word - value) >= 0 : (int32_t)(uint32_t)(word - value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ: return word == value;
    case CU_STREAM_WAIT_VALUE_AND: return (word & value) != 0;
    default: /* CU_STREAM_WAIT_VALUE_NOR */ return wide ? ~(word | value) != 0 : (uint32_t) ~(word | value) != 0;
    }
}

static CUresult run_op(const CUstreamBatchMemOpParams *op)
{
    void *at = (void *)(uintptr_t)op->writeValue.address;
    switch (op->operation) {
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        __atomic_store_n((uint32_t *)at, op->writeValue.value, __ATOMIC_RELEASE);
        break;
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        __atomic_store_n((uint64_t *)at, op->writeValue.value64, __ATOMIC_RELEASE);
        break;
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64: return wait_holds(op) ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
    default: break; /* a barrier, a flush: the fake's writes are made in order on the host already */
    }
    return CUDA_SUCCESS;
}

static CUresult batch(int ptsz, int v2, CUstream s, unsigned count, CUstreamBatchMemOpParams *ops, unsigned flags)
{
    if (!fake_stream_of(s, ptsz))
        return CUDA_ERROR_INVALID_HANDLE;
    if (count == 0 || count > MAX_OPS || !ops || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++)
        if (!op_ok(&ops[i], v2))
            return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    for (unsigned i = 0; i < count && rc == CUDA_SUCCESS; i++)
        rc = run_op(&ops[i]);
    return rc;
}

static CUresult batch_v1(int ptsz, CUstream s, unsigned count, CUstreamBatchMemOpParams *ops, unsigned flags)
{
    return batch(ptsz, 0, s, count, ops, flags);
}

static CUresult batch_v2(int ptsz, CUstream s, unsigned count, CUstreamBatchMemOpParams *ops, unsigned flags)
{
    return batch(ptsz, 1, s, count, ops, flags);
}

WITH_PTSZ(cuStreamBatchMemOp, batch_v1,
          (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray, unsigned int flags), stream,
          count, paramArray, flags)
WITH_PTSZ(cuStreamBatchMemOp_v2, batch_v2,
          (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray, unsigned int flags), stream,
          count, paramArray, flags)
