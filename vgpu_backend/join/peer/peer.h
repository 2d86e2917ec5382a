/*
 * One vGPU backend per process.  libvgpu-cuda owns it; libvgpu-nvml, a
 * separate library with its own copy of every static, reaches it through a
 * private export table that libvgpu-cuda serves from cuGetExportTable under
 * vgpu's own id, the way NVIDIA's runtime reaches private driver interfaces.
 * So a process joins its vGPU once (one BAR0 attach, one mediator
 * connection, one refusal message), whichever library asks first.
 */
#pragma once

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu_backend/join/self.h"

/* "vgpu-peer-" and six random bytes: no driver table has this id. */
#define VGPU_PEER_TABLE_ID                                                                                         \
    {                                                                                                              \
        { 0x76, 0x67, 0x70, 0x75, 0x2d, 0x70, 0x65, 0x65, 0x72, 0x2d, 0xb3, 0x91, 0x5e, 0x0c, 0x47, 0xa1 }         \
    }

struct vgpu_peer_table {
    size_t size;           /* sizeof(struct vgpu_peer_table) */
    char version[32];      /* VGPU_VERSION: both libraries must come from one build */
    size_t self_size;      /* sizeof(struct vgpu_self): the layout the pointer below has */
    const struct vgpu_self *(*join)(bool take_slot);
};

/* libvgpu-cuda: the table for id, or NULL when id is not vgpu's. */
const struct vgpu_peer_table *vgpu_peer_table_for(const CUuuid *id);

/* libvgpu-nvml: the process's vGPU, joined through libvgpu-cuda when it is
 * in the process or beside this library, else by this library itself. */
const struct vgpu_self *vgpu_peer_self(void);
