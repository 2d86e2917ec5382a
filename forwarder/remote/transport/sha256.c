/* SHA-256 (sha256.h). */
#include "forwarder/remote/transport/sha256.h"

#include <stdbool.h>
#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

/* nblocks 64-byte blocks into state. */
static void blocks_portable(uint32_t state[8], const uint8_t *p, size_t nblocks)
{
    for (; nblocks--; p += 64) {
        uint32_t w[64];
        for (int i = 0; i < 16; i++)
            w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5], g = state[6],
                 h = state[7];
        for (int i = 0; i < 64; i++) {
            uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
            uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        state[0] += a;
        state[1] += b;
        state[2] += c;
        state[3] += d;
        state[4] += e;
        state[5] += f;
        state[6] += g;
        state[7] += h;
    }
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/* The SHA extensions' rounds (SHA256RNDS2 and the message schedule's
 * SHA256MSG1/2), four rounds a step, the state kept as ABEF and CDGH. */
__attribute__((target("sha,sse4.1"))) static void blocks_sha_ni(uint32_t state[8], const uint8_t *p, size_t nblocks)
{
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bull, 0x0405060700010203ull);
    __m128i t = _mm_loadu_si128((const __m128i *)&state[0]);  /* DCBA */
    __m128i s1 = _mm_loadu_si128((const __m128i *)&state[4]); /* HGFE */
    t = _mm_shuffle_epi32(t, 0xB1);                             /* CDAB */
    s1 = _mm_shuffle_epi32(s1, 0x1B);                           /* EFGH */
    __m128i s0 = _mm_alignr_epi8(t, s1, 8);                     /* ABEF */
    s1 = _mm_blend_epi16(s1, t, 0xF0);                          /* CDGH */
    for (; nblocks--; p += 64) {
        __m128i a0 = s0, c0 = s1, m[4], msg;
        for (int i = 0; i < 4; i++)
            m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), swap);
        for (int r = 0; r < 16; r++) {
            __m128i cur = m[r & 3];
            msg = _mm_add_epi32(cur, _mm_loadu_si128((const __m128i *)&K[4 * r]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
            msg = _mm_shuffle_epi32(msg, 0x0E);
            s0 = _mm_sha256rnds2_epu32(s0, s1, msg);
            if (r < 12) {
                /* The schedule's next four words, from the last sixteen. */
                __m128i next = _mm_sha256msg1_epu32(m[r & 3], m[(r + 1) & 3]);
                next = _mm_add_epi32(next, _mm_alignr_epi8(m[(r + 3) & 3], m[(r + 2) & 3], 4));
                m[r & 3] = _mm_sha256msg2_epu32(next, m[(r + 3) & 3]);
            }
        }
        s0 = _mm_add_epi32(s0, a0);
        s1 = _mm_add_epi32(s1, c0);
    }
    t = _mm_shuffle_epi32(s0, 0x1B);      /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);     /* DCHG */
    s0 = _mm_blend_epi16(t, s1, 0xF0);    /* DCBA */
    s1 = _mm_alignr_epi8(s1, t, 8);       /* HGFE */
    _mm_storeu_si128((__m128i *)&state[0], s0);
    _mm_storeu_si128((__m128i *)&state[4], s1);
}

static bool have_sha_ni(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 29)))
        return false;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 19)) && (c & (1u << 9)); /* SSE4.1, SSSE3 */
}
#endif

static void hash(const void *data, size_t n, uint8_t out[VGPU_SHA256_BYTES], bool fast)
{
    uint32_t state[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    void (*blocks)(uint32_t *, const uint8_t *, size_t) = blocks_portable;
#if defined(__x86_64__)
    if (fast && have_sha_ni())
        blocks = blocks_sha_ni;
#else
    (void)fast;
#endif
    const uint8_t *p = data;
    blocks(state, p, n / 64);
    uint8_t tail[128] = { 0 };
    size_t rest = n % 64, len = rest < 56 ? 64 : 128;
    memcpy(tail, p + n - rest, rest);
    tail[rest] = 0x80;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        tail[len - 1 - i] = (uint8_t)(bits >> (8 * i));
    blocks(state, tail, len / 64);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(state[i] >> (24 - 8 * j));
}

void vgpu_sha256(const void *data, size_t n, uint8_t out[VGPU_SHA256_BYTES])
{
    hash(data, n, out, true);
}

void vgpu_sha256_portable(const void *data, size_t n, uint8_t out[VGPU_SHA256_BYTES])
{
    hash(data, n, out, false);
}
