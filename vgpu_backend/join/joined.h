/*
 * What joining came to (self.h joins): the mode, where the vGPU came from,
 * its devices and its BAR0.  The record alone, which status_publish.c
 * reads as self.c does.
 */
#pragma once

#include <stdint.h>

#include "vgpu/nvml_abi.h"
#include "common/contract/protocol/mediator_client.h"
#include "common/contract/settings/settings.h"
#include "common/contract/window/bar0.h"

enum vgpu_mode {
    VGPU_MODE_OFF,     /* no vGPU configured: pass-through */
    VGPU_MODE_ON,      /* in a vGPU */
    VGPU_MODE_REFUSED, /* configured but unusable: the process sees no device */
};

enum vgpu_source {
    VGPU_SOURCE_STANDALONE, /* the environment; the process's own BAR0 file */
    VGPU_SOURCE_MEDIATOR,   /* vgpu-mediatord */
    VGPU_SOURCE_GUEST,      /* a guest window (ivshmem) */
};

struct vgpu_device {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlDevice_t nvml;       /* the driver's NVML handle */
    uint64_t physical_total; /* the GPU's memory */
};

struct vgpu_self {
    enum vgpu_mode mode;
    enum vgpu_source source;
    char why[2048];          /* VGPU_MODE_REFUSED: what to fix */
    struct vgpu_settings settings;   /* VGPU_SOURCE_STANDALONE */
    struct vgpu_mediator_link link;  /* VGPU_SOURCE_MEDIATOR */
    int ndev;
    struct vgpu_device dev[VGPU_MAX_DEVICES];
    struct vgpu_bar0_map bar0;
};
