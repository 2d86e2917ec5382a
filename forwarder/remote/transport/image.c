/* Module images' extents (image.h). */
#include "forwarder/remote/transport/image.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define FATBIN_MAGIC 0xba55ed50u
#define FATBIN_WRAPPER_MAGIC 0x466243b1u

/* end = max(end, off + len), 0 when that passes max (or overflows). */
static int extend(uint64_t *end, uint64_t off, uint64_t len, size_t max)
{
    if (off > max || len > max - off)
        return -1;
    if (off + len > *end)
        *end = off + len;
    return 0;
}

static size_t elf_extent(const unsigned char *p, size_t max)
{
    uint64_t end = 64, phoff, shoff;
    uint16_t phentsize, phnum, shentsize, shnum;
    if (max < 64)
        return 0;
    memcpy(&phoff, p + 0x20, 8);
    memcpy(&shoff, p + 0x28, 8);
    memcpy(&phentsize, p + 0x36, 2);
    memcpy(&phnum, p + 0x38, 2);
    memcpy(&shentsize, p + 0x3a, 2);
    memcpy(&shnum, p + 0x3c, 2);
    if (extend(&end, phoff, (uint64_t)phentsize * phnum, max) || extend(&end, shoff, (uint64_t)shentsize * shnum, max))
        return 0;
    if (shnum && shentsize < 64)
        return 0;
    for (uint16_t i = 0; i < shnum; i++) {
        const unsigned char *sh = p + shoff + (uint64_t)i * shentsize;
        uint32_t type;
        uint64_t off, size;
        memcpy(&type, sh + 4, 4);
        memcpy(&off, sh + 0x18, 8);
        memcpy(&size, sh + 0x20, 8);
        if (type != 8 /* SHT_NOBITS: no bytes in the file */ && extend(&end, off, size, max))
            return 0;
    }
    if (phnum && phentsize < 56)
        return 0;
    for (uint16_t i = 0; i < phnum; i++) {
        const unsigned char *ph = p + phoff + (uint64_t)i * phentsize;
        uint64_t off, filesz;
        memcpy(&off, ph + 0x08, 8);
        memcpy(&filesz, ph + 0x20, 8);
        if (extend(&end, off, filesz, max))
            return 0;
    }
    return (size_t)end;
}

bool vgpu_remote_image_is_wrapper(const void *image, size_t n)
{
    uint32_t magic;
    if (n < sizeof(magic))
        return false;
    memcpy(&magic, image, sizeof(magic));
    return magic == FATBIN_WRAPPER_MAGIC;
}

/* Text to its NUL, of characters PTX is written in: no control character
 * but white space (a binary structure the driver knows by its first bytes,
 * and whose words it follows, is not text). */
static size_t text_extent(const unsigned char *p, size_t max)
{
    size_t n = 0;
    for (; n < max && p[n]; n++)
        if ((p[n] < 0x20 && (p[n] < '\t' || p[n] > '\r')) || p[n] == 0x7f)
            return 0;
    return n < max ? n + 1 : 0;
}

size_t vgpu_remote_image_extent(const void *image, size_t max)
{
    const unsigned char *p = image;
    if (vgpu_remote_image_is_wrapper(image, max))
        return 0; /* its words are addresses in the memory of whoever made it */
    if (max >= 16) {
        uint32_t magic;
        memcpy(&magic, p, 4);
        if (magic == FATBIN_MAGIC) { /* u32 magic, u16 version, u16 header size, u64 size after the header */
            uint16_t head;
            uint64_t body, end = 0;
            memcpy(&head, p + 6, 2);
            memcpy(&body, p + 8, 8);
            return head >= 16 && extend(&end, head, body, max) == 0 ? (size_t)end : 0;
        }
        if (memcmp(p, "\177ELF", 4) == 0)
            return p[4] == 2 ? elf_extent(p, max) : 0; /* ELF64 only */
    }
    return text_extent(p, max);
}

const void *vgpu_remote_image_unwrap(const void *image)
{
    struct {
        uint32_t magic, version;
        const void *data, *prelinked;
    } w;
    if (!image)
        return NULL;
    memcpy(&w, image, sizeof(w.magic));
    if (w.magic != FATBIN_WRAPPER_MAGIC)
        return image;
    memcpy(&w, image, sizeof(w));
    return w.version == 1 ? w.data : NULL;
}
