/* What a program's ELF headers say about how vgpu can reach it (libelf). */
#pragma once

#include <stdbool.h>

struct vgpu_elf_facts {
    bool program;     /* an ELF executable or shared object */
    bool x86_64;      /* the only architecture vgpu's libraries are built for */
    bool has_interp;  /* PT_INTERP: the kernel starts the dynamic loader */
    bool has_soname;  /* DT_SONAME: a library */
    bool go;          /* built by Go */
};

/* Fills f from path's headers; f stays all false for anything else. */
void vgpu_read_elf_facts(const char *path, struct vgpu_elf_facts *f);

/*
 * Statically linked: no dynamic loader will run in it, so neither
 * LD_PRELOAD nor a library path can bring vgpu in.  ld.so run as a program
 * has no PT_INTERP either, but it is a library (DT_SONAME) and honours
 * LD_PRELOAD for the program it loads.
 */
static inline bool vgpu_elf_is_static(const struct vgpu_elf_facts *f)
{
    return f->program && !f->has_interp && !f->has_soname;
}
