/* A program's ELF facts; see elf_facts.h. */
#define _GNU_SOURCE
#include "tools/lib/elf_facts.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

static void scan_program_headers(Elf *elf, struct vgpu_elf_facts *f)
{
    size_t n;
    if (elf_getphdrnum(elf, &n) != 0)
        return;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP)
            f->has_interp = true;
    }
}

static bool has_soname(Elf_Scn *scn, const GElf_Shdr *sh)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
    for (size_t i = 0; data && i < count; i++) {
        GElf_Dyn d;
        if (gelf_getdyn(data, (int)i, &d) && d.d_tag == DT_SONAME)
            return true;
    }
    return false;
}

static void scan_sections(Elf *elf, struct vgpu_elf_facts *f)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
        if (name && (strcmp(name, ".go.buildinfo") == 0 || strcmp(name, ".note.go.buildid") == 0))
            f->go = true;
        if (sh.sh_type == SHT_DYNAMIC && has_soname(scn, &sh))
            f->has_soname = true;
    }
}

void vgpu_read_elf_facts(const char *path, struct vgpu_elf_facts *f)
{
    memset(f, 0, sizeof(*f));
    if (elf_version(EV_CURRENT) == EV_NONE)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* execute-only: nothing to learn, and exec may still work */
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    if (elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &eh) &&
        (eh.e_type == ET_EXEC || eh.e_type == ET_DYN)) {
        f->program = true;
        f->x86_64 = eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_machine == EM_X86_64;
        scan_program_headers(elf, f);
        scan_sections(elf, f);
    }
    if (elf)
        elf_end(elf);
    close(fd);
}
