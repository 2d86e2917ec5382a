/* The library that links libcuda.so.1, two levels below the program, as
 * ggml's CUDA backend is (program -> libggml -> libggml-cuda -> libcuda).
 * Its cu* references are bound by the loader, so the probe sees what
 * ggml's backend would. */
#define _GNU_SOURCE
#include "test/loadorder/probe.h"

__attribute__((visibility("default"))) int chain_bottom_probe(void);
__attribute__((visibility("default"))) int chain_bottom_probe(void)
{
    const struct probe_cuda linked = PROBE_CUDA_LINKED;
    return probe_cuda(&linked);
}
