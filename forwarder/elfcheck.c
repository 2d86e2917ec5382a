#define _GNU_SOURCE
#include "forwarder/elfcheck.h"

#include "common/identity.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

static bool scan_dynsym(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const char *symbol)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
    for (size_t i = 0; data && i < count; i++) {
        GElf_Sym s;
        if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF)
            continue;
        const char *name = elf_strptr(elf, sh->sh_link, s.st_name);
        if (name && strcmp(name, symbol) == 0)
            return true;
    }
    return false;
}

static const char *dynamic_soname(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
    for (size_t i = 0; data && i < count; i++) {
        GElf_Dyn d;
        if (gelf_getdyn(data, (int)i, &d) && d.d_tag == DT_SONAME)
            return elf_strptr(elf, sh->sh_link, d.d_un.d_val);
    }
    return NULL;
}

/* NULL when elf is a real copy of the library *arg describes. */
static const char *check_driver(Elf *elf, const void *arg)
{
    const struct vgpu_driver_spec *spec = arg;
    GElf_Ehdr eh;
    if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
        return "not an ELF file";
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
        return "built for another architecture";
    if (eh.e_type != ET_DYN)
        return "not a shared library";

    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return "no section names";
    bool has_init = false;
    const char *soname = NULL;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        const char *secname = elf_strptr(elf, shstrndx, sh.sh_name);
        if (secname && strcmp(secname, VGPU_NOTE_SECTION) == 0)
            return "is a vgpu library";
        if (sh.sh_type == SHT_DYNSYM && !has_init)
            has_init = scan_dynsym(elf, scn, &sh, spec->init_symbol);
        else if (sh.sh_type == SHT_DYNAMIC)
            soname = dynamic_soname(elf, scn, &sh);
    }
    if (!soname || strcmp(soname, spec->soname) != 0)
        return "wrong SONAME";
    if (!has_init)
        return spec->init_symbol[0] == 'c' ? "does not define cuInit" : "does not define nvmlInit_v2";
    return NULL;
}

/* Opens path with libelf and returns check(elf, arg), or fallback when the
 * file cannot be read as ELF. */
static const char *with_elf(const char *path, const char *(*check)(Elf *, const void *), const void *arg,
                            const char *unreadable)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return "cannot be opened";
    const char *why = unreadable;
    if (elf_version(EV_CURRENT) != EV_NONE) {
        Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
        if (elf) {
            why = check(elf, arg);
            elf_end(elf);
        }
    }
    close(fd);
    return why;
}

const char *vgpu_elf_check(const char *path, const struct vgpu_driver_spec *spec)
{
    /* The toolkit's link-time stub has the right SONAME and symbols, but
     * every call of it fails with CUDA_ERROR_STUB_LIBRARY. */
    if (strstr(path, "/stubs/"))
        return "is the CUDA toolkit's link-time stub";
    return with_elf(path, check_driver, spec, "cannot be read");
}

/* NULL when elf carries vgpu's note section. */
static const char *check_vgpu(Elf *elf, const void *unused)
{
    (void)unused;
    size_t shstrndx;
    if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0)
        return "not ELF";
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
        if (name && strcmp(name, VGPU_NOTE_SECTION) == 0)
            return NULL;
    }
    return "not vgpu";
}

bool vgpu_elf_is_vgpu(const char *path)
{
    return with_elf(path, check_vgpu, NULL, "cannot be read") == NULL;
}
