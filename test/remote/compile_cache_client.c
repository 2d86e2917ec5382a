/*
 * NVRTC's compute cache in a guest (the private table da9151d3-...), called
 * as NVRTC calls it: compile_cache_client COMMAND ARGS...
 *
 *   lookup SOURCE SIZE    "hit" (the bytes store wrote for SOURCE, checked)
 *                         or "miss"
 *   store SOURCE SIZE     stores SIZE bytes made from SOURCE: "stored"
 *   variants SOURCE       stores SOURCE's entry, then looks up a key that
 *                         differs from it in each input: "variants missed"
 *   nvrtc LIBNVRTC        compiles a program with NVRTC (which asks this
 *                         library for the table): "ptx BYTES HASH"
 *
 * Exits 1 on anything unexpected (a hit with other bytes, a variant hit).
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*key_fn)(void **, int, const void *, unsigned, const char *, const char *, const char *, int, int);
typedef CUresult (*free_key_fn)(void *);
typedef CUresult (*lookup_fn)(void *, unsigned, void **, unsigned *);
typedef CUresult (*store_fn)(void *, unsigned, const void *, unsigned);
typedef CUresult (*free_data_fn)(void *);

static const void *const *table;

static void fail(const char *what)
{
    fprintf(stderr, "compile_cache_client: %s\n", what);
    exit(1);
}

/* What NVRTC passes, varied by which (0: none). */
static void *key_of(const char *source, int vary)
{
    char src[256];
    snprintf(src, sizeof(src), "%s", source);
    if (vary == 2)
        src[0] ^= 1;
    void *key = NULL;
    CUresult r = ((key_fn)table[1])(&key, vary == 1 ? 2 : 1, src, (unsigned)strlen(src),
                                    vary == 3 ? "-arch=sm_90 -G" : "-arch=sm_90", vary == 4 ? "HOST32" : "HOST64",
                                    vary == 5 ? "Aug 20 202514:13:53" : "Aug 20 202514:13:52", vary == 6 ? 1 : 0,
                                    vary == 7 ? 1 : 0);
    if (r != CUDA_SUCCESS || !key)
        fail("no key");
    return key;
}

static unsigned char *bytes_of(const char *source, unsigned size)
{
    unsigned char *p = malloc(size ? size : 1);
    uint32_t h = 2166136261u;
    for (const char *s = source; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    for (unsigned i = 0; i < size; i++)
        p[i] = (unsigned char)((h >> (i % 4 * 8)) + i);
    return p;
}

/* 1 where the key hits with exactly source's bytes, 0 where it misses. */
static int lookup(void *key, const char *source, unsigned size)
{
    void *data = NULL;
    unsigned got = 0;
    if (((lookup_fn)table[3])(key, 0, &data, &got) != CUDA_SUCCESS)
        return 0;
    unsigned char *want = bytes_of(source, size);
    if (got != size || memcmp(data, want, size) != 0)
        fail("a hit with other bytes");
    free(want);
    ((free_data_fn)table[6])(data);
    return 1;
}

static void store(void *key, const char *source, unsigned size)
{
    unsigned char *p = bytes_of(source, size);
    if (((store_fn)table[4])(key, 0, p, size) != CUDA_SUCCESS)
        fail("store refused");
    free(p);
}

typedef int (*nvrtc_create)(void **, const char *, const char *, int, const char *const *, const char *const *);
typedef int (*nvrtc_compile)(void *, int, const char *const *);
typedef int (*nvrtc_size)(void *, size_t *);
typedef int (*nvrtc_get)(void *, char *);
typedef int (*nvrtc_destroy)(void **);

static int nvrtc(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW);
    if (!lib)
        fail(dlerror());
    static const char source[] = "extern \"C\" __global__ void scale(float *x, float a, int n)\n"
                                 "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }\n";
    const char *options[] = { "-arch=compute_90" };
    void *prog = NULL;
    if (((nvrtc_create)dlsym(lib, "nvrtcCreateProgram"))(&prog, source, "scale.cu", 0, NULL, NULL) != 0)
        fail("nvrtcCreateProgram failed");
    if (((nvrtc_compile)dlsym(lib, "nvrtcCompileProgram"))(prog, 1, options) != 0)
        fail("nvrtcCompileProgram failed");
    size_t n = 0, logn = 0;
    ((nvrtc_size)dlsym(lib, "nvrtcGetPTXSize"))(prog, &n);
    ((nvrtc_size)dlsym(lib, "nvrtcGetProgramLogSize"))(prog, &logn);
    char *ptx = malloc(n + 1), *log = malloc(logn + 1);
    ((nvrtc_get)dlsym(lib, "nvrtcGetPTX"))(prog, ptx);
    ((nvrtc_get)dlsym(lib, "nvrtcGetProgramLog"))(prog, log);
    log[logn] = '\0';
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)ptx[i]) * 1099511628211ull;
    printf("ptx %zu %016llx\nlog [%s]\n", n, (unsigned long long)h, log);
    ((nvrtc_destroy)dlsym(lib, "nvrtcDestroyProgram"))(&prog);
    free(ptx);
    free(log);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        fail("usage: compile_cache_client lookup|store|variants|nvrtc ARGS...");
    if (strcmp(argv[1], "nvrtc") == 0)
        return nvrtc(argv[2]);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda)
        fail(dlerror());
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(cuda, "cuInit");
    CUresult (*get_table)(const void **, const CUuuid *) =
        (CUresult(*)(const void **, const CUuuid *))dlsym(cuda, "cuGetExportTable");
    if (!init || !get_table || init(0) != CUDA_SUCCESS)
        fail("cuInit failed");
    static const CUuuid id = { { (char)0xda, (char)0x91, 0x51, (char)0xd3, 0x3a, (char)0xe6, (char)0xcc, 0x41,
                                 (char)0xa5, (char)0xc0, 0x4f, 0x26, (char)0xd5, 0x33, (char)0xe3, 0x28 } };
    if (get_table((const void **)&table, &id) != CUDA_SUCCESS || !table)
        fail("no compute cache table");
    if ((size_t)table[0] < 7 * sizeof(void *))
        fail("the table is short");
    const char *source = argv[2];
    unsigned size = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 4096;
    void *key = key_of(source, 0);
    if (strcmp(argv[1], "lookup") == 0) {
        puts(lookup(key, source, size) ? "hit" : "miss");
    } else if (strcmp(argv[1], "store") == 0) {
        store(key, source, size);
        puts("stored");
    } else if (strcmp(argv[1], "variants") == 0) {
        store(key, source, size);
        if (!lookup(key, source, size))
            fail("the entry just stored missed");
        for (int vary = 1; vary <= 7; vary++) {
            void *other = key_of(source, vary);
            if (lookup(other, source, size)) {
                fprintf(stderr, "compile_cache_client: input %d changed, the key still hit\n", vary);
                return 1;
            }
            ((free_key_fn)table[2])(other);
        }
        puts("variants missed");
    } else {
        fail("unknown command");
    }
    ((free_key_fn)table[2])(key);
    return 0;
}
