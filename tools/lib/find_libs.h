/*
 * Where vgpu's own libraries are, for the tools that load them into a
 * command (vgpu-run, vgpu-doctor --preload): --lib-dir, $VGPU_LIB_DIR, the
 * directories next to the running tool, then the install libdir.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define VGPU_CUDA_LIB "libvgpu-cuda.so"
#define VGPU_NVML_LIB "libvgpu-nvml.so"

/* Sized for a directory realpath() returned plus a library's name. */
struct vgpu_libs {
    char dir[PATH_MAX];
    char cuda[PATH_MAX + sizeof(VGPU_CUDA_LIB) + 1];
    char nvml[PATH_MAX + sizeof(VGPU_NVML_LIB) + 1]; /* empty when not wanted */
};

/*
 * Finds the directory holding libvgpu-cuda.so (lib_dir only, when given)
 * and fills libs with canonical paths; with_nvml: libvgpu-nvml.so must be
 * there too.  0, or -1 with err saying where it looked and what to do.
 */
int vgpu_find_libs(const char *lib_dir, bool with_nvml, struct vgpu_libs *libs, char *err, size_t errlen);

/*
 * LD_PRELOAD with vgpu's libraries first, then the entries of old (NULL:
 * none).  An old entry naming either library, in any directory, is left
 * out: a second copy of vgpu would be loaded beside the first and fight it
 * for the same symbols.  malloc'd; NULL when out of memory.
 */
char *vgpu_preload_list(const struct vgpu_libs *libs, const char *old);
