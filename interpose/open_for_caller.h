/* Loads vgpu makes on a caller's behalf (open_for_caller.c). */
#pragma once

#include <dlfcn.h>

/*
 * dlmopen(lmid, file, mode) as the code at return address caller would have
 * made it, then rebinding dlopen and dlmopen in every object it loaded
 * (rebind.h).  The C library's answer: a handle, or NULL with dlerror set.
 */
void *vgpu_open_for_caller(Lmid_t lmid, const char *file, int mode, const void *caller);
