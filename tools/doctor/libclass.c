/* Telling vgpu, the driver and the stub apart; see checks.h. */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"

#include "forwarder/dispatch.h"
#include "forwarder/elfcheck.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const struct doc_libname doc_libs[DOC_NLIBS] = {
    [DOC_CUDA] = { "libcuda.so.1", "libcuda.so", "libvgpu-cuda.so", "libcuda" },
    [DOC_NVML] = { "libnvidia-ml.so.1", "libnvidia-ml.so", "libvgpu-nvml.so", "libnvidia-ml" },
};

enum doc_lib_kind doc_classify(const struct doc_fs *fs, const char *path, enum doc_which which)
{
    char canon[PATH_MAX], full[PATH_MAX * 2];
    if (doc_fs_resolve(fs, path, canon, sizeof(canon)) != 0)
        return DOC_LIB_MISSING;
    doc_fs_path(fs, canon, full, sizeof(full));
    if (vgpu_elf_is_vgpu(full))
        return DOC_LIB_VGPU;
    const char *why = vgpu_elf_check(full, which == DOC_CUDA ? &vgpu_cuda_spec : &vgpu_nvml_spec);
    if (!why)
        return DOC_LIB_DRIVER;
    /* The stub is told by its directory (elfcheck.c): the path as named or as resolved. */
    if (strstr(path, "/stubs/") || strstr(canon, "/stubs/"))
        return DOC_LIB_STUB;
    return DOC_LIB_OTHER;
}

const char *doc_kind_word(enum doc_lib_kind k)
{
    switch (k) {
    case DOC_LIB_VGPU: return "vgpu";
    case DOC_LIB_DRIVER: return "the driver";
    case DOC_LIB_STUB: return "the CUDA toolkit's link-time stub";
    case DOC_LIB_OTHER: return "neither vgpu nor a driver";
    default: return "missing";
    }
}

int doc_which_by_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (int i = 0; i < DOC_NLIBS; i++)
        if (strncmp(base, doc_libs[i].prefix, strlen(doc_libs[i].prefix)) == 0 ||
            strncmp(base, doc_libs[i].vgpu, strlen(doc_libs[i].vgpu)) == 0)
            return i;
    return -1;
}
