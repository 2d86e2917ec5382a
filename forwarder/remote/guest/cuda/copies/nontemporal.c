/*
 * Copies of large buffers with stores that go around the CPU's caches.  A staged copy moves each piece once by the CPU between a
 * block the executor shares and the program's memory; with ordinary stores
 * each line the CPU writes is first read into its cache (a third transfer
 * for every two), and the pieces, megabytes each, only push the program's
 * data out of the cache.  Non-temporal stores write whole lines to memory,
 * as the driver's own staging does.
 */
#include "forwarder/remote/guest/cuda/copies/nontemporal.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

/* Below this, an ordinary copy: the stores' fence costs more than they save. */
#define SMALL 4096

void vgpu_remote_copy_nontemporal(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    if (n < SMALL) {
        memcpy(dst, src, n);
        return;
    }
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 63);
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    for (; n >= 64; d += 64, s += 64, n -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16)),
                c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    _mm_sfence(); /* the stores are seen before the caller's next */
    memcpy(d, s, n);
#else
    memcpy(dst, src, n);
#endif
}
