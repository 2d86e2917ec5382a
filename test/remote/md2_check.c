/* md2_check: vgpu's MD2 and HMAC-MD2 (forwarder/remote/guest/cuda/private/hmac_md2.c) against
 * RFC 1319's test suite and an HMAC computed by its definition (RFC 2104). */
#include "forwarder/remote/guest/cuda/private/hmac_md2.h"

#include <stdio.h>
#include <string.h>

static void hex(const uint8_t d[16], char out[33])
{
    for (int i = 0; i < 16; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void md2(const void *p, size_t n, uint8_t out[16])
{
    struct vgpu_md2 m;
    vgpu_md2_init(&m);
    vgpu_md2_update(&m, p, n);
    vgpu_md2_final(&m, out);
}

int main(void)
{
    static const char *const suite[][2] = {
        { "", "8350e5a3e24c153df2275c9f80692773" },
        { "a", "32ec01ec4a6dac72c0ab96fb34c0b5d1" },
        { "abc", "da853b0d3f88d99b30283a69e6ded6bb" },
        { "message digest", "ab4f496bfb2a530b219ff33031fe06b0" },
        { "abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b" },
        { "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "da33def2a42df13975352846c30338cd" },
        { "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
          "d5976f79d83d3a0dc9806c3c66f3efd8" },
    };
    int bad = 0;
    uint8_t d[16];
    char h[33];
    for (size_t i = 0; i < sizeof(suite) / sizeof(suite[0]); i++) {
        md2(suite[i][0], strlen(suite[i][0]), d);
        hex(d, h);
        if (strcmp(h, suite[i][1]) != 0) {
            printf("FAIL: MD2(\"%s\") = %s, want %s\n", suite[i][0], h, suite[i][1]);
            bad = 1;
        }
    }
    /* HMAC by its definition, H((K^opad) . H((K^ipad) . m)), against the
     * function, with the message in parts of every split. */
    uint8_t key[16], block[32], inner[16], want[16], got[16];
    const char *msg = "the runtime's integrity input";
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)(i * 37 + 11);
    char buf[64];
    for (int i = 0; i < 16; i++)
        buf[i] = (char)(key[i] ^ 0x36);
    memcpy(buf + 16, msg, strlen(msg));
    md2(buf, 16 + strlen(msg), inner);
    for (int i = 0; i < 16; i++)
        block[i] = key[i] ^ 0x5c;
    memcpy(block + 16, inner, 16);
    md2(block, 32, want);
    for (size_t split = 0; split <= strlen(msg); split++) {
        struct vgpu_hmac_part parts[2] = { { msg, split }, { msg + split, strlen(msg) - split } };
        vgpu_hmac_md2(key, parts, 2, got);
        if (memcmp(got, want, 16) != 0) {
            printf("FAIL: HMAC-MD2 with the message split at %zu\n", split);
            bad = 1;
        }
    }
    if (!bad)
        printf("ok: MD2 and HMAC-MD2\n");
    return bad;
}
