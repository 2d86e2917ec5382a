/*
 * LD_PRELOAD as the process got it (/proc/PID/environ): whether it names
 * vgpu's libraries and they exist, whether the loader honoured it (not in
 * secure-execution mode), and, when it lacks vgpu while the parent has
 * it, that the parent rebuilt the child's environment from scratch.
 */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct preload {
    int entries, vgpu, slashed;
};

/* Counts the vgpu entries of list; with c, reports the bad ones. */
static struct preload scan(struct doc_ctx *c, const struct doc_fs *fs, const char *list)
{
    struct preload r = { 0 };
    char *copy = strdup(list ? list : ""), *rest = copy, *entry;
    char hint[8192];
    while (copy && (entry = strsep(&rest, " :"))) { /* the loader's separators */
        if (!*entry)
            continue;
        r.entries++;
        if (!strchr(entry, '/')) {
            if (c)
                doc_add(&c->report, DOC_INFO, "preload", "LD_PRELOAD names %s without a directory: the loader "
                        "looks for it along its library path", entry);
            continue;
        }
        r.slashed++;
        int which = doc_which_by_name(entry);
        enum doc_lib_kind kind = doc_classify(fs, entry, which == DOC_NVML ? DOC_NVML : DOC_CUDA);
        if (kind == DOC_LIB_VGPU) {
            r.vgpu++;
        } else if (c && kind == DOC_LIB_MISSING) {
            doc_fix(doc_add(&c->report, DOC_PROBLEM, "preload",
                            "LD_PRELOAD names %s, which does not exist%s: the loader skips it", entry,
                            fs->root[0] ? " in the process's file system" : ""),
                    "point LD_PRELOAD at vgpu's libraries (%s %s), or let vgpu-run set it: %s", c->libs.cuda,
                    c->libs.nvml, doc_rerun_hint(c, hint, sizeof(hint)));
        } else if (c && strstr(entry, "libvgpu-")) {
            doc_fix(doc_add(&c->report, DOC_PROBLEM, "preload", "LD_PRELOAD names %s, which is %s, not vgpu",
                            entry, doc_kind_word(kind)),
                    "reinstall vgpu (sudo meson install -C build), or point LD_PRELOAD at its libraries (%s %s)",
                    c->libs.cuda, c->libs.nvml);
        }
    }
    free(copy);
    return r;
}

/* The parent had vgpu in LD_PRELOAD and this process lost it. */
static bool report_dropped(struct doc_ctx *c)
{
    struct doc_proc parent;
    if (c->proc->ppid <= 0 || doc_proc_load(&c->host, c->proc->ppid, &parent) != 0)
        return false;
    const char *theirs = doc_proc_getenv(&parent, "LD_PRELOAD");
    bool had = scan(NULL, &c->fs, theirs).vgpu > 0;
    if (had) {
        const char *mine = doc_proc_getenv(c->proc, "LD_PRELOAD");
        char what[4200], install[8192];
        snprintf(what, sizeof(what), mine ? "LD_PRELOAD=%s" : "no LD_PRELOAD", mine);
        if (c->vgpu_mapped[DOC_CUDA] || c->vgpu_mapped[DOC_NVML])
            doc_add(&c->report, DOC_OK, "preload", "its parent, process %d (%s), has vgpu in LD_PRELOAD and this "
                    "process has %s, but vgpu came in through the library path all the same", parent.pid,
                    parent.name, what);
        else
            doc_fix(doc_add(&c->report, DOC_PROBLEM, "preload",
                            "LD_PRELOAD did not reach this process: its parent, process %d (%s), has "
                            "LD_PRELOAD=%s, and this process has %s. The parent started it with an environment "
                            "of its own making (as some servers start their workers), which left LD_PRELOAD out",
                            parent.pid, parent.name, theirs, what),
                    "%s", doc_system_install_hint(c, install, sizeof(install)));
    }
    doc_proc_free(&parent);
    return had;
}

void doc_check_preload(struct doc_ctx *c)
{
    if (!c->proc)
        return;
    if (!c->proc->env) {
        doc_fix(doc_add(&c->report, DOC_WARNING, "preload", "cannot read process %d's environment: %s",
                        c->proc->pid, strerror(c->proc->env_errno)),
                "run vgpu-doctor as the process's user or as root: sudo vgpu-doctor %d", c->proc->pid);
        return;
    }
    const char *list = doc_proc_getenv(c->proc, "LD_PRELOAD");
    struct preload p = scan(c, &c->fs, list);
    unsigned long secure = 0;
    if (p.slashed && doc_proc_auxv(&c->host, c->proc->pid, AT_SECURE, &secure) == 0 && secure) {
        char install[8192];
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "preload",
                        "the process runs in secure-execution mode (a set-user-ID or set-group-ID program, or one "
                        "with file capabilities): the loader ignored every LD_PRELOAD entry with a slash, vgpu's "
                        "too"),
                "%s", doc_system_install_hint(c, install, sizeof(install)));
        return;
    }
    if (p.vgpu) {
        c->preload_has_vgpu = true;
        doc_add(&c->report, DOC_OK, "preload", "LD_PRELOAD names vgpu: %s", list);
        return;
    }
    if (report_dropped(c))
        return;
    if (!list)
        doc_add(&c->report, DOC_INFO, "preload", "LD_PRELOAD is not set%s", c->vgpu_mapped[DOC_CUDA] ||
                c->vgpu_mapped[DOC_NVML] ? "; vgpu came in through the library path (the symlink install)" : "");
    else
        doc_add(&c->report, DOC_INFO, "preload", "LD_PRELOAD does not name vgpu: %s", list);
}
