/*
 * nontemporal_check: the guest's copy around the CPU's caches
 * (forwarder/remote/guest/cuda/copies/nontemporal.c), by which staged
 * copies reach the program's memory, against memcpy: every alignment of
 * source and destination within a line, lengths about the point where it
 * stops being a memcpy and about whole lines, and a few megabytes; the
 * bytes either side of the destination left alone.
 */
#include "forwarder/remote/guest/cuda/copies/nontemporal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 64

static int failed;

static void check(size_t n, size_t src_at, size_t dst_at)
{
    unsigned char *src = malloc(n + 128), *dst = malloc(n + 128 + 2 * GUARD), *want = malloc(n + 128 + 2 * GUARD);
    for (size_t i = 0; i < n + 128; i++)
        src[i] = (unsigned char)(i * 131 + n);
    memset(dst, 0xa5, n + 128 + 2 * GUARD);
    memcpy(want, dst, n + 128 + 2 * GUARD);
    memcpy(want + GUARD + dst_at, src + src_at, n);
    vgpu_remote_copy_nontemporal(dst + GUARD + dst_at, src + src_at, n);
    if (memcmp(dst, want, n + 128 + 2 * GUARD) != 0 && !failed++)
        printf("FAIL: %zu bytes from offset %zu to offset %zu differ from memcpy's\n", n, src_at, dst_at);
    free(src);
    free(dst);
    free(want);
}

int main(void)
{
    static const size_t lengths[] = { 0, 1, 63, 64, 4095, 4096, 4097, 4159, 4160, 65536 + 17, (3u << 20) + 5 };
    for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++)
        for (size_t s = 0; s < 64; s += (lengths[l] > 65536 ? 13 : 1))
            for (size_t d = 0; d < 64; d += (lengths[l] > 65536 ? 7 : 1))
                check(lengths[l], s, d);
    if (!failed)
        printf("ok: copies around the caches equal memcpy's\n");
    return failed != 0;
}
