/* Text made safe to print on a terminal; see terminal_safe.h. */
#include "tools/lib/terminal_safe.h"

#include <stdbool.h>
#include <stdint.h>

/* The code point of the UTF-8 sequence at s and its length, or 0 when s
 * holds none (a stray byte, an overlong form, a surrogate, past U+10FFFF). */
static int decode(const unsigned char *s, uint32_t *cp)
{
    int n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (!n || s[0] > 0xf4)
        return 0;
    uint32_t c = s[0] & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) /* the terminating NUL stops it too */
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    static const uint32_t least[] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (c < least[n] || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
        return 0;
    *cp = c;
    return n;
}

static bool harmful(uint32_t c)
{
    return c < 0x20 || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

void vgpu_terminal_safe(char *s)
{
    unsigned char *in = (unsigned char *)s, *out = in;
    while (*in) {
        uint32_t c = *in;
        int n = c < 0x80 ? 1 : decode(in, &c);
        if (!n || harmful(c)) {
            *out++ = '?';
            in += n ? n : 1;
            continue;
        }
        for (int i = 0; i < n; i++)
            *out++ = *in++;
    }
    *out = '\0';
}
