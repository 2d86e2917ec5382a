/* Finding the real driver library behind vgpu. */
#pragma once

#include "forwarder/specs.h"

#include <stddef.h>

#include <dlfcn.h>

typedef void *(*vgpu_dlopen_fn)(const char *file, int mode);
typedef void *(*vgpu_dlmopen_fn)(Lmid_t lmid, const char *file, int mode);

/* The C library's dlopen and dlmopen (vgpu exports its own; see
 * interpose/dlopen.c).  Never NULL: where one cannot be found, a function
 * that logs why and fails. */
vgpu_dlopen_fn vgpu_real_dlopen(void);
vgpu_dlmopen_fn vgpu_real_dlmopen(void);

struct vgpu_found {
    void *handle;      /* opened by absolute path, never closed */
    char path[4096];
};

/*
 * Search, in order: $<spec->override_env>; a copy already loaded in the
 * process that is not vgpu; the dynamic loader's own search (LD_LIBRARY_PATH,
 * then the ld.so cache and default directories); $CUDA_HOME and $CUDA_PATH;
 * the directories of /etc/ld.so.conf.  Every candidate is verified with
 * libelf before it is opened.  Returns 0, or -1 with a summary of where it
 * looked (and why each candidate was refused) in looked.
 */
int vgpu_pathfind(const struct vgpu_driver_spec *spec, struct vgpu_found *out, char *looked, size_t looked_len);
