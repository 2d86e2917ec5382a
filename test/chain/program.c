/*
 * A program that reaches libcuda.so.1 only through two libraries:
 * program -> libvgpuchain_middle -> libvgpuchain_bottom -> libcuda.so.1.
 * The loader then maps the C library before libcuda.so.1, so vgpu, found
 * in its place, comes after the C library in the load order.
 *
 * Prints what it saw and checks it against TEST_EXPECT_VGPU (1: cuInit is
 * vgpu's), TEST_EXPECT_COUNT and TEST_EXPECT_TOTAL (bytes), where set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int chain_middle_probe(char *driver, size_t driver_len, int *count, size_t *total);

int main(void)
{
    char driver[4096] = "";
    int count = -1;
    size_t total = 0;
    int r = chain_middle_probe(driver, sizeof(driver), &count, &total);
    printf("cuInit from %s; result %d, %d device(s), device 0 total %zu\n", driver, r, count, total);
    const char *want_vgpu = getenv("TEST_EXPECT_VGPU"), *want_count = getenv("TEST_EXPECT_COUNT"),
               *want_total = getenv("TEST_EXPECT_TOTAL");
    if (want_vgpu && (strstr(driver, "libvgpu-cuda") != NULL) != (atoi(want_vgpu) == 1)) {
        fprintf(stderr, "FAIL cuInit comes from %s\n", driver);
        return 1;
    }
    if (want_count && count != atoi(want_count)) {
        fprintf(stderr, "FAIL %d devices, expected %s (result %d)\n", count, want_count, r);
        return 1;
    }
    if (want_total && total != strtoull(want_total, NULL, 10)) {
        fprintf(stderr, "FAIL device 0 shows %zu bytes, expected %s\n", total, want_total);
        return 1;
    }
    return r == 0 ? 0 : 1;
}
