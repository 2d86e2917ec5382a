/*
 * Why vgpu writes other objects' GOT entries: an object loaded with
 * RTLD_DEEPBIND looks its symbols up in its own dependencies first, so its
 * references to dlopen bind to the C library's even where vgpu is preloaded;
 * an object in another link-map namespace never sees vgpu's exports at all.
 * Either could then dlopen("libcuda.so") and get the real driver, with no
 * quota.  After vgpu has made such a load (open_for_caller.c), it points the
 * new objects' dlopen and dlmopen references (JUMP_SLOT and GLOB_DAT
 * relocations, by symbol name) at its own, making RELRO pages writable for
 * the write and read-only again after it.  Their later loads then go
 * through vgpu's redirects, like everyone else's.
 */
#define _GNU_SOURCE
#include "interpose/rebind.h"

#include "common/identity.h"
#include "common/log.h"

#include <dlfcn.h>
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The exported thunks (dlopen_thunk.S, dlmopen_thunk.S), by their hidden names. */
void *vgpu_dlopen_thunk(const char *file, int mode);
void *vgpu_dlmopen_thunk(Lmid_t lmid, const char *file, int mode);

static int count_one(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)info, (void)size;
    (*(size_t *)ctx)++;
    return 0;
}

struct filling {
    struct vgpu_loaded_set *s;
    size_t cap;
};

static int add_one(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    struct filling *f = ctx;
    f->s->base[f->s->n++] = info->dlpi_addr;
    return f->s->n == f->cap; /* stop: full */
}

static int by_address(const void *a, const void *b)
{
    ElfW(Addr) x = *(const ElfW(Addr) *)a, y = *(const ElfW(Addr) *)b;
    return x < y ? -1 : x > y;
}

int vgpu_loaded_set_take(struct vgpu_loaded_set *s)
{
    size_t n = 0;
    dl_iterate_phdr(count_one, &n);
    s->n = 0;
    s->base = malloc((n + 16) * sizeof(*s->base)); /* and what other threads load meanwhile */
    if (!s->base)
        return -1;
    struct filling f = { s, n + 16 };
    dl_iterate_phdr(add_one, &f);
    qsort(s->base, s->n, sizeof(*s->base), by_address);
    return 0;
}

void vgpu_loaded_set_free(struct vgpu_loaded_set *s)
{
    free(s->base);
    s->base = NULL;
    s->n = 0;
}

/* The reference a relocation makes, if it is to dlopen or dlmopen: where
 * vgpu's own is, else NULL. */
static void *replacement(const ElfW(Rela) *r, const ElfW(Sym) *symtab, const char *strtab)
{
    unsigned long type = ELF64_R_TYPE(r->r_info);
    if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
        return NULL;
    const ElfW(Sym) *sym = &symtab[ELF64_R_SYM(r->r_info)];
    if (sym->st_shndx != SHN_UNDEF) /* the C library's own definition */
        return NULL;
    const char *name = strtab + sym->st_name;
    if (strcmp(name, "dlopen") == 0)
        return (void *)vgpu_dlopen_thunk;
    if (strcmp(name, "dlmopen") == 0)
        return (void *)vgpu_dlmopen_thunk;
    return NULL;
}

struct object {
    ElfW(Addr) base;
    ElfW(Addr) relro_start, relro_end; /* page-aligned; equal when none */
    int relro_open;
    int rebound;
};

static void write_slot(struct object *o, void **slot, void *value)
{
    ElfW(Addr) a = (ElfW(Addr))slot;
    if (*slot == value)
        return;
    if (a >= o->relro_start && a < o->relro_end && !o->relro_open) {
        if (mprotect((void *)o->relro_start, o->relro_end - o->relro_start, PROT_READ | PROT_WRITE) != 0) {
            vgpu_warn("cannot make the RELRO pages at %p writable to rebind dlopen there; that object's loads "
                      "bypass vgpu",
                      (void *)o->relro_start);
            return;
        }
        o->relro_open = 1;
    }
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    o->rebound++;
}

static void rebind_table(struct object *o, const ElfW(Rela) *rela, size_t bytes, const ElfW(Sym) *symtab,
                         const char *strtab)
{
    for (size_t i = 0; rela && i < bytes / sizeof(*rela); i++) {
        void *to = replacement(&rela[i], symtab, strtab);
        if (to)
            write_slot(o, (void **)(o->base + rela[i].r_offset), to);
    }
}

static void rebind_object(struct dl_phdr_info *info, struct object *o)
{
    const ElfW(Dyn) *dyn = NULL;
    long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        else if (ph->p_type == PT_GNU_RELRO) {
            o->relro_start = (info->dlpi_addr + ph->p_vaddr) & ~(ElfW(Addr))(page - 1);
            o->relro_end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(ElfW(Addr))(page - 1);
        }
    }
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *rela = NULL, *jmprel = NULL;
    size_t relasz = 0, pltrelsz = 0;
    long pltrel = DT_RELA;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        ElfW(Addr) p = vgpu_dynamic_address(o->base, dyn->d_un.d_ptr);
        switch (dyn->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)p; break;
        case DT_STRTAB: strtab = (const char *)p; break;
        case DT_RELA: rela = (const ElfW(Rela) *)p; break;
        case DT_RELASZ: relasz = dyn->d_un.d_val; break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)p; break;
        case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
        case DT_PLTREL: pltrel = (long)dyn->d_un.d_val; break;
        default: break;
        }
    }
    if (!symtab || !strtab || pltrel != DT_RELA)
        return;
    rebind_table(o, rela, relasz, symtab, strtab);
    rebind_table(o, jmprel, pltrelsz, symtab, strtab);
    if (o->relro_open)
        mprotect((void *)o->relro_start, o->relro_end - o->relro_start, PROT_READ);
}

/* Rebinds one object unless it is vgpu; returns how many references. */
static int rebind_unless_vgpu(struct dl_phdr_info *info)
{
    if (vgpu_loaded_object_is_vgpu(info))
        return 0;
    struct object o = { .base = info->dlpi_addr };
    rebind_object(info, &o);
    if (o.rebound)
        vgpu_debug("rebound dlopen/dlmopen in %s (%d reference(s))", info->dlpi_name, o.rebound);
    return o.rebound;
}

struct rebinding {
    const struct vgpu_loaded_set *before;
    int rebound;
};

static int rebind_if_new(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    struct rebinding *r = ctx;
    const struct vgpu_loaded_set *b = r->before;
    if (!b->base || !bsearch(&info->dlpi_addr, b->base, b->n, sizeof(*b->base), by_address))
        r->rebound += rebind_unless_vgpu(info);
    return 0;
}

int vgpu_rebind_new_objects(const struct vgpu_loaded_set *before)
{
    /* dl_iterate_phdr shows the caller's namespace: vgpu's, the base. */
    struct rebinding r = { before, 0 };
    dl_iterate_phdr(rebind_if_new, &r);
    return r.rebound;
}

/* What dl_iterate_phdr would say of lm, for an object in another namespace,
 * which dl_iterate_phdr does not show: 0, or -1. */
static int phdr_info_of(struct link_map *lm, struct dl_phdr_info *info)
{
    memset(info, 0, sizeof(*info));
    info->dlpi_addr = lm->l_addr;
    info->dlpi_name = lm->l_name;
    const ElfW(Phdr) *ph = NULL;
    int n = dlinfo(lm, RTLD_DI_PHDR, &ph); /* glibc 2.36 and later */
    if (n <= 0 || !ph) {
        /* Older: the headers a shared object maps at its load base. */
        const ElfW(Ehdr) *e = (const ElfW(Ehdr) *)lm->l_addr;
        if (!e || memcmp(e->e_ident, ELFMAG, SELFMAG) != 0 || e->e_phentsize != sizeof(ElfW(Phdr)))
            return -1;
        ph = (const ElfW(Phdr) *)(lm->l_addr + e->e_phoff);
        n = e->e_phnum;
    }
    info->dlpi_phdr = ph;
    info->dlpi_phnum = (ElfW(Half))n;
    return 0;
}

int vgpu_rebind_namespace(void *handle)
{
    struct link_map *lm = NULL;
    int rebound = 0;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        return 0;
    while (lm->l_prev)
        lm = lm->l_prev;
    /* Unlocked, unlike dl_iterate_phdr: a namespace vgpu has just loaded
     * into is its caller's, which is waiting for this load to return. */
    for (; lm; lm = lm->l_next) {
        struct dl_phdr_info info;
        if (phdr_info_of(lm, &info) == 0)
            rebound += rebind_unless_vgpu(&info);
    }
    return rebound;
}
