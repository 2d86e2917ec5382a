/*
 * The process's program: a statically linked one runs no dynamic loader,
 * so nothing (LD_PRELOAD, a library path, the ld.so cache) can bring vgpu
 * into it.
 */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"

#include "tools/lib/elf_facts.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void doc_check_program(struct doc_ctx *c)
{
    char link[64], path[PATH_MAX * 2], exe[PATH_MAX] = "?";
    if (c->proc) {
        snprintf(link, sizeof(link), "/proc/%d/exe", c->proc->pid);
        doc_fs_path(&c->host, link, path, sizeof(path));
        ssize_t n = readlink(path, exe, sizeof(exe) - 1);
        if (n > 0)
            exe[n] = '\0';
    } else if (c->program) {
        snprintf(path, sizeof(path), "%s", c->program);
        snprintf(exe, sizeof(exe), "%s", c->program);
    } else {
        return;
    }
    if (c->proc && access(path, R_OK) != 0) {
        int e = errno;
        doc_fix(doc_add(&c->report, DOC_WARNING, "program", "cannot read process %d's program %s: %s",
                        c->proc->pid, exe, strerror(e)),
                "run vgpu-doctor as the process's user or as root: sudo vgpu-doctor %d", c->proc->pid);
        return;
    }
    struct vgpu_elf_facts f;
    vgpu_read_elf_facts(path, &f);
    if (!f.program) {
        doc_add(&c->report, DOC_INFO, "program", "%s is not an ELF program", exe);
        return;
    }
    if (vgpu_elf_is_static(&f)) {
        c->is_static = true;
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "program",
                        "%s is statically linked: no dynamic loader runs in it, so neither LD_PRELOAD nor the "
                        "symlink install can load vgpu into it, and it uses the GPU without vGPU limits",
                        exe),
                "use a dynamically linked build of %s (one that loads libcuda.so.1)", exe);
        return;
    }
    if (!f.x86_64) {
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "program",
                        "%s is not an x86-64 program; vgpu's libraries are x86-64 only, so the loader skips them "
                        "and it runs without vGPU limits", exe),
                "run an x86-64 build of %s", exe);
        return;
    }
    doc_add(&c->report, DOC_OK, "program", "%s is dynamically linked%s", exe, f.go ? " (a Go program)" : "");
}
