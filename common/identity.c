#define _GNU_SOURCE
#include "common/identity.h"

#include <dlfcn.h>
#include <elf.h>
#include <stdint.h>
#include <string.h>

/* The note itself: name "vgpu", one word of payload (the note format). */
__attribute__((section(VGPU_NOTE_SECTION), used, aligned(4))) static const struct {
    uint32_t namesz, descsz, type;
    char name[8];
    uint32_t format;
} vgpu_note = { 5, 4, VGPU_NOTE_TYPE, VGPU_NOTE_NAME, 1 };

static bool notes_have_vgpu(const char *p, size_t len)
{
    while (len >= sizeof(ElfW(Nhdr))) {
        const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
        size_t name = (n->n_namesz + 3u) & ~3u, desc = (n->n_descsz + 3u) & ~3u;
        size_t total = sizeof(*n) + name + desc;
        if (total > len)
            return false;
        if (n->n_type == VGPU_NOTE_TYPE && n->n_namesz == sizeof(VGPU_NOTE_NAME) &&
            memcmp(p + sizeof(*n), VGPU_NOTE_NAME, sizeof(VGPU_NOTE_NAME)) == 0)
            return true;
        p += total;
        len -= total;
    }
    return false;
}

bool vgpu_loaded_object_is_vgpu(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE &&
            notes_have_vgpu((const char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz))
            return true;
    }
    return false;
}

static int is_vgpu_at(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    return info->dlpi_addr == ((const struct link_map *)ctx)->l_addr && vgpu_loaded_object_is_vgpu(info);
}

bool vgpu_handle_is_vgpu(void *handle)
{
    struct link_map *lm = NULL;
    return dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && dl_iterate_phdr(is_vgpu_at, lm);
}

const char *vgpu_object_path_of(const void *addr)
{
    Dl_info di;
    if (!dladdr(addr, &di))
        return NULL;
    return di.dli_fname;
}
