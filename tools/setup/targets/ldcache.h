/*
 * What the target system's loader would load for a SONAME: the first entry
 * of its ld.so cache (read with forwarder/ldso.c, as the pathfinder reads
 * it), and whether that file is vgpu, the driver, or something else (read
 * with libelf, as the pathfinder checks its candidates).
 */
#pragma once

#include "forwarder/dispatch.h"
#include "tools/setup/setup.h"

#include <stddef.h>

/* 1 with the target path of soname's first cache entry in path; 0 if the
 * cache has none; -1 if there is no cache. */
int setup_cache_resolve(const struct setup_ctx *c, const char *soname, char *path, size_t len);

enum setup_lib_kind { SETUP_LIB_VGPU, SETUP_LIB_DRIVER, SETUP_LIB_OTHER };

/* What the file at target path is, following links inside the target
 * system; for SETUP_LIB_OTHER, why it is not the driver in why. */
enum setup_lib_kind setup_lib_kind(const struct setup_ctx *c, const char *path, const struct vgpu_driver_spec *spec,
                                   char *why, size_t whylen);
