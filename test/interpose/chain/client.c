/*
 * A program that reaches libcuda.so.1 only through two libraries:
 * program -> libvgpuchain_middle -> libvgpuchain_bottom -> libcuda.so.1.
 * The loader then maps the C library before libcuda.so.1, so vgpu, found
 * in its place, comes after the C library in the load order.
 *
 * Checks what it saw against TEST_EXPECT_* (test/loadorder/probe.h); with
 * TEST_DRIVER_FIRST, opens the real driver by its path first.
 */
#define _GNU_SOURCE
#include "test/loadorder/probe.h"

int chain_middle_probe(void);

int main(void)
{
    probe_open_driver_first();
    return chain_middle_probe() == 0 ? 0 : 1;
}
