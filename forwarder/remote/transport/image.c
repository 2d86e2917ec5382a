/* Module images' extents (image.h). */
#include "forwarder/remote/transport/image.h"

#include <stdint.h>
#include <string.h>

#define FATBIN_MAGIC 0xba55ed50u

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

size_t vgpu_remote_image_extent(const void *image, size_t max)
{
    const unsigned char *p = image;
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
    size_t n = strnlen((const char *)p, max);
    return n < max ? n + 1 : 0;
}

#define FATBIN_WRAPPER_MAGIC 0x466243b1u

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
