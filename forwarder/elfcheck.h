/* Is this file a real driver library?  Read with libelf, never loaded. */
#pragma once

#include "forwarder/specs.h"

#include <stdbool.h>

/*
 * NULL if path is a real copy of spec's library: an x86-64 shared object with
 * the right SONAME that defines spec->init_symbol and is not a vgpu library
 * (no .note.vgpu section) nor the CUDA toolkit's stub.  Otherwise the reason,
 * for the log line.
 */
const char *vgpu_elf_check(const char *path, const struct vgpu_driver_spec *spec);

/* True if path is a vgpu library (carries the .note.vgpu section). */
bool vgpu_elf_is_vgpu(const char *path);
