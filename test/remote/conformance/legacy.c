/*
 * The 32-bit forms of CUDA 3.x, as a program built before the _v2 names
 * calls them: copies between host memory and arrays (1D, 2D, 3D, their
 * asynchronous forms), copies to and from memory of the legacy cuMemAlloc
 * (below 4 GiB), a 32-bit copy of an address that does not fit 32 bits
 * (truncated: no memory of the program's), and cuModuleGetGlobal.
 */
#include "conformance.h"

#include <stdint.h>
#include <string.h>

/* Bytes i * 3 + seed, n of them. */
static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 3 + seed);
}

static unsigned long sum_of(const unsigned char *p, size_t n)
{
    unsigned long s = 0;
    for (size_t i = 0; i < n; i++)
        s += p[i];
    return s;
}

static const char *same(const void *a, const void *b, size_t n)
{
    return memcmp(a, b, n) == 0 ? "match" : "differ";
}

/* A 1D array of 64 bytes: written and read whole and at offsets. */
static void one_dimension(CUstream s)
{
    CUarray a = NULL;
    CUDA_ARRAY_DESCRIPTOR d = { .Width = 16, .Height = 0, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 };
    unsigned char in[64], out[64], part[16];
    pattern(in, sizeof(in), 7);
    SHOW("cuArrayCreate_v2 1D", F(cuArrayCreate_v2)(&a, &d));
    SHOW("cuMemcpyHtoA", F(cuMemcpyHtoA)(a, 0, in, sizeof(in)));
    memset(out, 0, sizeof(out));
    SHOW("cuMemcpyAtoH", F(cuMemcpyAtoH)(out, a, 0, sizeof(out)));
    printf("1D array bytes back: %s (sum %lu)\n", same(in, out, sizeof(in)), sum_of(out, sizeof(out)));
    pattern(part, sizeof(part), 101);
    SHOW("cuMemcpyHtoAAsync at 24", F(cuMemcpyHtoAAsync)(a, 24, part, sizeof(part), s));
    memset(out, 0, sizeof(out));
    SHOW("cuMemcpyAtoHAsync from 16", F(cuMemcpyAtoHAsync)(out, a, 16, 32, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    printf("1D array after the offset write: %s %s %s\n", same(out, in + 16, 8), same(out + 8, part, 16),
           same(out + 24, in + 40, 8));
    TRY("cuMemcpyHtoA past the end", F(cuMemcpyHtoA)(a, 56, in, 16));
    TRY("cuMemcpyAtoH past the end", F(cuMemcpyAtoH)(out, a, 60, 8));
    SHOW("cuArrayDestroy 1D", F(cuArrayDestroy)(a));
}

/* A 2D array of 4 rows of 8 floats: CUDA_MEMCPY2D_v1 copies. */
static void two_dimensions(CUstream s)
{
    CUarray a = NULL;
    CUDA_ARRAY_DESCRIPTOR d = { .Width = 8, .Height = 4, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 };
    float in[4][8], out[4][8], box[2][3] = { { 100, 101, 102 }, { 110, 111, 112 } };
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 8; x++)
            in[y][x] = (float)(y * 10 + x);
    SHOW("cuArrayCreate_v2 2D", F(cuArrayCreate_v2)(&a, &d));
    CUDA_MEMCPY2D_v1 c = { .srcMemoryType = CU_MEMORYTYPE_HOST,
                           .srcHost = in,
                           .srcPitch = sizeof(in[0]),
                           .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                           .dstArray = a,
                           .WidthInBytes = sizeof(in[0]),
                           .Height = 4 };
    SHOW("cuMemcpy2D host to array", F(cuMemcpy2D)(&c));
    memset(out, 0, sizeof(out));
    CUDA_MEMCPY2D_v1 back = { .srcMemoryType = CU_MEMORYTYPE_ARRAY,
                              .srcArray = a,
                              .dstMemoryType = CU_MEMORYTYPE_HOST,
                              .dstHost = out,
                              .dstPitch = sizeof(out[0]),
                              .WidthInBytes = sizeof(out[0]),
                              .Height = 4 };
    SHOW("cuMemcpy2DUnaligned array to host", F(cuMemcpy2DUnaligned)(&back));
    printf("2D array back: %s\n", same(in, out, sizeof(in)));
    /* 3 floats of 2 rows into the array at column 2, row 1. */
    CUDA_MEMCPY2D_v1 part = { .srcMemoryType = CU_MEMORYTYPE_HOST,
                              .srcHost = box,
                              .srcPitch = sizeof(box[0]),
                              .dstXInBytes = 2 * sizeof(float),
                              .dstY = 1,
                              .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                              .dstArray = a,
                              .WidthInBytes = sizeof(box[0]),
                              .Height = 2 };
    SHOW("cuMemcpy2DAsync host to array", F(cuMemcpy2DAsync)(&part, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    SHOW("cuMemcpy2D array to host", F(cuMemcpy2D)(&back));
    for (int y = 0; y < 4; y++)
        printf("2D row %d: %g %g %g %g %g %g %g %g\n", y, out[y][0], out[y][1], out[y][2], out[y][3], out[y][4],
               out[y][5], out[y][6], out[y][7]);
    CUDA_MEMCPY2D_v1 wide = back;
    wide.dstPitch = 4; /* shorter than a row */
    TRY("cuMemcpy2D pitch shorter than the width", F(cuMemcpy2D)(&wide));
    SHOW("cuArrayDestroy 2D", F(cuArrayDestroy)(a));
}

/* A 3D array of 2 layers of 3 rows of 4 words: CUDA_MEMCPY3D_v1 copies. */
static void three_dimensions(CUstream s)
{
    CUarray a = NULL;
    CUDA_ARRAY3D_DESCRIPTOR d = {
        .Width = 4, .Height = 3, .Depth = 2, .Format = CU_AD_FORMAT_UNSIGNED_INT32, .NumChannels = 1
    };
    unsigned in[2][3][4], out[2][3][4];
    for (unsigned i = 0; i < 24; i++)
        (&in[0][0][0])[i] = 1000 + i * 7;
    SHOW("cuArray3DCreate_v2", F(cuArray3DCreate_v2)(&a, &d));
    CUDA_MEMCPY3D_v1 c = { .srcMemoryType = CU_MEMORYTYPE_HOST,
                           .srcHost = in,
                           .srcPitch = sizeof(in[0][0]),
                           .srcHeight = 3,
                           .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                           .dstArray = a,
                           .WidthInBytes = sizeof(in[0][0]),
                           .Height = 3,
                           .Depth = 2 };
    SHOW("cuMemcpy3D host to array", F(cuMemcpy3D)(&c));
    memset(out, 0, sizeof(out));
    CUDA_MEMCPY3D_v1 back = { .srcMemoryType = CU_MEMORYTYPE_ARRAY,
                              .srcArray = a,
                              .dstMemoryType = CU_MEMORYTYPE_HOST,
                              .dstHost = out,
                              .dstPitch = sizeof(out[0][0]),
                              .dstHeight = 3,
                              .WidthInBytes = sizeof(out[0][0]),
                              .Height = 3,
                              .Depth = 2 };
    SHOW("cuMemcpy3DAsync array to host", F(cuMemcpy3DAsync)(&back, s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    printf("3D array back: %s (last word %u)\n", same(in, out, sizeof(in)), out[1][2][3]);
    /* The second layer's middle row alone. */
    unsigned row[4] = { 0 };
    CUDA_MEMCPY3D_v1 one = { .srcMemoryType = CU_MEMORYTYPE_ARRAY,
                             .srcArray = a,
                             .srcY = 1,
                             .srcZ = 1,
                             .dstMemoryType = CU_MEMORYTYPE_HOST,
                             .dstHost = row,
                             .dstPitch = sizeof(row),
                             .dstHeight = 1,
                             .WidthInBytes = sizeof(row),
                             .Height = 1,
                             .Depth = 1 };
    SHOW("cuMemcpy3D a row of the second layer", F(cuMemcpy3D)(&one));
    printf("3D layer 1 row 1: %u %u %u %u\n", row[0], row[1], row[2], row[3]);
    SHOW("cuArrayDestroy 3D", F(cuArrayDestroy)(a));
}

/* Memory of the legacy cuMemAlloc, below 4 GiB, through the 32-bit
 * copies; and a 64-bit address cut to 32 bits, which is none of it. */
static void linear(CUstream s)
{
    CUdeviceptr_v1 small = 0;
    CUdeviceptr wide = 0;
    unsigned char in[256], out[256];
    pattern(in, sizeof(in), 3);
    SHOW("cuMemAlloc", F(cuMemAlloc)(&small, sizeof(in)));
    printf("legacy allocation given: %s\n", small ? "yes" : "no");
    SHOW("cuMemcpyHtoD", F(cuMemcpyHtoD)(small, in, sizeof(in)));
    memset(out, 0, sizeof(out));
    SHOW("cuMemcpyDtoH", F(cuMemcpyDtoH)(out, small, sizeof(out)));
    printf("legacy allocation bytes back: %s\n", same(in, out, sizeof(in)));
    SHOW("cuMemcpyHtoDAsync at 128", F(cuMemcpyHtoDAsync)(small + 128, in, 64, s));
    memset(out, 0, sizeof(out));
    SHOW("cuMemcpyDtoHAsync", F(cuMemcpyDtoHAsync)(out, small, sizeof(out), s));
    SHOW("cuStreamSynchronize", F(cuStreamSynchronize)(s));
    printf("legacy allocation after the offset write: %s %s\n", same(out, in, 128), same(out + 128, in, 64));
    TRY("cuMemcpyDtoH past the legacy allocation", F(cuMemcpyDtoH)(out, small + 200, 100));
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&wide, 4096));
    printf("64-bit allocation past 4 GiB: %s\n", wide > UINT32_MAX ? "yes" : "no");
    if (wide > UINT32_MAX) {
        TRY("cuMemcpyHtoD to the address cut to 32 bits", F(cuMemcpyHtoD)((CUdeviceptr_v1)wide, in, 16));
        TRY("cuMemcpyDtoH from the address cut to 32 bits", F(cuMemcpyDtoH)(out, (CUdeviceptr_v1)wide, 16));
    }
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(wide));
    SHOW("cuMemFree", F(cuMemFree)(small));
}

static void globals(void)
{
    CUmodule mod = NULL;
    CUdeviceptr_v1 d = 0;
    unsigned int bytes = 0;
    CUdeviceptr d2 = 0;
    size_t bytes2 = 0;
    SHOW("cuModuleLoadData", F(cuModuleLoadData)(&mod, "fakegpu"));
    TRY("cuModuleGetGlobal of no such global", F(cuModuleGetGlobal)(&d, &bytes, mod, "no_such_global"));
    TRY("cuModuleGetGlobal_v2 of no such global", F(cuModuleGetGlobal_v2)(&d2, &bytes2, mod, "no_such_global"));
    TRY("cuModuleGetGlobal with no name", F(cuModuleGetGlobal)(&d, &bytes, mod, NULL));
    SHOW("cuModuleUnload", F(cuModuleUnload)(mod));
}

void conformance_legacy(void)
{
    CUstream s = NULL;
    SHOW("cuStreamCreate", F(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING));
    one_dimension(s);
    two_dimensions(s);
    three_dimensions(s);
    linear(s);
    globals();
    SHOW("cuStreamDestroy_v2", F(cuStreamDestroy_v2)(s));
}
