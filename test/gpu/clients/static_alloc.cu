// The same as static_alloc.c through the CUDA runtime, for test/gpu/mediator/watch.sh
// where a static glibc cannot dlopen the driver: the runtime linked
// statically (nvcc -cudart static), the program with -Xlinker -static.
#include <cstdio>
#include <unistd.h>

int main()
{
    void *p = nullptr;
    cudaError_t e = cudaMalloc(&p, 1ull << 30);
    if (e != cudaSuccess) {
        fprintf(stderr, "static_alloc: cudaMalloc: %s\n", cudaGetErrorString(e));
        return 2;
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
