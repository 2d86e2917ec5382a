/*
 * sha256_check: vgpu's SHA-256 (forwarder/remote/transport/sha256.c), by which the
 * executor's cache names module images, against FIPS 180-4's examples, and
 * the SHA extensions' code (where the CPU has them) against the portable
 * code on every length up to 4 KiB and on a few large buffers.
 */
#include "forwarder/remote/transport/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed;

static void expect(const char *what, const void *data, size_t n, const char *want)
{
    uint8_t h[VGPU_SHA256_BYTES];
    char hex[2 * VGPU_SHA256_BYTES + 1];
    vgpu_sha256(data, n, h);
    for (int i = 0; i < VGPU_SHA256_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", h[i]);
    if (strcmp(hex, want) != 0) {
        printf("FAIL %s: %s, want %s\n", what, hex, want);
        failed = 1;
    }
}

int main(void)
{
    expect("\"abc\"", "abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect("the empty string", "", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    expect("448 bits", two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    size_t million = 1000000;
    char *a = malloc(million);
    memset(a, 'a', million);
    expect("a million a's", a, million, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
    size_t big = 3 << 20;
    unsigned char *b = malloc(big);
    unsigned x = 12345;
    for (size_t i = 0; i < big; i++)
        b[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    size_t lengths[] = { 65536, 1 << 20, big - 1, big };
    for (size_t n = 0; n < 4096 + sizeof(lengths) / sizeof(*lengths); n++) {
        /* From an address off alignment as often as not. */
        size_t at = n & 7, len = n < 4096 ? n : lengths[n - 4096] - at;
        uint8_t fast[VGPU_SHA256_BYTES], slow[VGPU_SHA256_BYTES];
        vgpu_sha256(b + at, len, fast);
        vgpu_sha256_portable(b + at, len, slow);
        if (memcmp(fast, slow, sizeof(fast)) != 0) {
            printf("FAIL: the fast and the portable code differ on %zu bytes\n", len);
            failed = 1;
            break;
        }
    }
    free(b);
    if (!failed)
        printf("ok: FIPS 180-4's examples, and the fast code equals the portable on every length to 4 KiB and 3 MiB\n");
    return failed;
}
