/*
 * The doctor's checks.  Each reads what it needs under the rooted file
 * systems of the context, adds its findings to the report, and leaves
 * what later checks build on in the context.  main.c runs them in the
 * order below.
 */
#pragma once

#include <stdbool.h>

#include "tools/doctor/fsroot.h"
#include "tools/doctor/proc.h"
#include "tools/doctor/report.h"
#include "tools/lib/find_libs.h"
#include "common/contract/window/status_page.h"

/* The two libraries vgpu stands in for. */
enum doc_which { DOC_CUDA, DOC_NVML, DOC_NLIBS };

struct doc_libname {
    const char *soname;   /* libcuda.so.1 */
    const char *prefix;   /* libcuda.so: the names a driver copy may carry */
    const char *vgpu;     /* libvgpu-cuda.so */
    const char *label;    /* libcuda */
};
extern const struct doc_libname doc_libs[DOC_NLIBS];

enum doc_lib_kind {
    DOC_LIB_MISSING,
    DOC_LIB_VGPU,
    DOC_LIB_DRIVER,
    DOC_LIB_STUB,  /* the CUDA toolkit's link-time stub */
    DOC_LIB_OTHER, /* something else under the name */
};

/* What the file at path (inside fs; symlinks followed) is, as library which. */
enum doc_lib_kind doc_classify(const struct doc_fs *fs, const char *path, enum doc_which which);
/* "vgpu", "the driver", ... for sentences. */
const char *doc_kind_word(enum doc_lib_kind k);
/* Which library a file name is, by name (libcuda.so*, libvgpu-cuda.so...), or -1. */
int doc_which_by_name(const char *path);

struct doc_ctx {
    struct doc_fs host;          /* --root: the machine's files */
    struct doc_fs fs;            /* the process's files: its container's root, else host */
    struct doc_report report;
    const char *service;         /* --service NAME */
    struct doc_proc *proc;       /* NULL: no process */
    struct vgpu_libs libs;       /* vgpu's installed libraries, for the fixes */
    const char *program;         /* -- COMMAND with no process left: the program it ran */

    /* Learned by the checks. */
    bool is_static;
    bool vgpu_mapped[DOC_NLIBS], driver_mapped[DOC_NLIBS];
    bool maps_read;
    bool preload_has_vgpu;
    bool remote;                 /* VGPU_REMOTE: its calls are an executor's (check_remote.c) */
    bool have_record;
    struct vgpu_status_page record;
    bool mediator_answers;
    bool service_uses_vgpu;      /* its drop-in brings vgpu in */
    bool service_vulkan_off;     /* its drop-in sets OLLAMA_VULKAN=0 */
};

/* How to restart the process under vgpu, for fixes. */
const char *doc_rerun_hint(const struct doc_ctx *c, char *buf, size_t len);
/* The symlink install's directory and the command that installs it, for fixes. */
const char *doc_system_install_hint(const struct doc_ctx *c, char *buf, size_t len);

void doc_check_program(struct doc_ctx *c);
void doc_check_maps(struct doc_ctx *c);
void doc_check_preload(struct doc_ctx *c);
void doc_check_remote(struct doc_ctx *c);
void doc_check_record(struct doc_ctx *c);
void doc_check_mediator(struct doc_ctx *c);
void doc_check_ldso(struct doc_ctx *c);
void doc_check_service(struct doc_ctx *c);
void doc_check_vulkan(struct doc_ctx *c);
