/*
 * Pointing the dlopen and dlmopen references of newly loaded objects at
 * vgpu's own (rebind.c says why).
 */
#pragma once

#include <link.h>
#include <stddef.h>

/* An address from a loaded object's dynamic section.  glibc relocates those
 * in place, except where the section is read-only: an address below the
 * object's load base is still relative to it. */
static inline ElfW(Addr) vgpu_dynamic_address(ElfW(Addr) base, ElfW(Addr) ptr)
{
    return ptr < base ? base + ptr : ptr;
}

/* The objects loaded now (their load bases, sorted). */
struct vgpu_loaded_set {
    ElfW(Addr) *base;
    size_t n;
};

/* 0, or -1 without memory (then every object counts as new). */
int vgpu_loaded_set_take(struct vgpu_loaded_set *s);
void vgpu_loaded_set_free(struct vgpu_loaded_set *s);

/* Rebinds dlopen and dlmopen in every object of the base namespace loaded
 * since before was taken, vgpu's own copies excepted.  Returns how many
 * references it rebound. */
int vgpu_rebind_new_objects(const struct vgpu_loaded_set *before);

/* The same for every object in the namespace of handle, which is not the
 * base namespace: none of them can bind to vgpu's exports. */
int vgpu_rebind_namespace(void *handle);
