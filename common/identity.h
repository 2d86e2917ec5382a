/*
 * How vgpu recognises its own libraries: each carries an ELF note named
 * "vgpu" (section .note.vgpu, in a PT_NOTE segment), so neither a symlink
 * chain nor a renamed copy can make the pathfinder forward vgpu to itself.
 */
#pragma once

#include <link.h>
#include <stdbool.h>

#define VGPU_NOTE_NAME "vgpu"
#define VGPU_NOTE_SECTION ".note.vgpu"
#define VGPU_NOTE_TYPE 0x76677075u /* "vgpu" */

/* True if the loaded object described by info carries the vgpu note. */
bool vgpu_loaded_object_is_vgpu(const struct dl_phdr_info *info);

/* True if the object a dlopen handle stands for carries the vgpu note. */
bool vgpu_handle_is_vgpu(void *handle);

/* Path of the loaded object that contains addr, or NULL. */
const char *vgpu_object_path_of(const void *addr);
