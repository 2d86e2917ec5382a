/* Linked against libcuda.so.1 (DT_NEEDED), as most CUDA programs are.  Checks
 * what it saw against TEST_EXPECT_* (test/loadorder/probe.h); with
 * TEST_DRIVER_FIRST, opens the real driver by its path first. */
#define _GNU_SOURCE
#include "test/loadorder/probe.h"

int main(void)
{
    probe_open_driver_first();
    const struct probe_cuda linked = PROBE_CUDA_LINKED;
    return probe_cuda(&linked) == 0 ? 0 : 1;
}
