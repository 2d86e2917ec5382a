/*
 * The vGPU this process is in: its devices, limits and BAR0, joined once per
 * process (libvgpu-nvml joins through libvgpu-cuda: peer.h).  Where it comes
 * from, first that applies:
 *   1. vgpu-mediatord, when its socket is there (mediator_client.h): the
 *      mediator decides; VGPU_* settings are ignored;
 *   2. a guest window behind a virtual PCI device, in a VM (pci_window.h);
 *   3. the environment, standalone (settings.h).
 * With none of these the process is in no vGPU and vgpu only forwards.
 */
#pragma once

#include <stdbool.h>
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

/*
 * Joins once and returns the result (never NULL).  take_slot: enter BAR0's
 * process table (libvgpu-cuda, whose allocations count); libvgpu-nvml only
 * reads.  Thread-safe; the first caller logs a refusal.
 */
const struct vgpu_self *vgpu_self_join(bool take_slot);

/* The joined vGPU when it is on, else NULL.  Cheap: for hot paths. */
struct vgpu_self *vgpu_self_on(void);

/*
 * Before accounting: after fork the child holds no process slot, and takes
 * one in its parent's vGPU (a child that goes on to use CUDA); after a
 * mediator restart the process reattaches.  Cheap when neither happened.
 * False when the process may not take memory: it could not be counted
 * (a fork child that could not rejoin is refused, logged once).
 */
bool vgpu_self_check(struct vgpu_self *self);

/* The vGPU index of an NVML handle of the driver's, or -1. */
int vgpu_self_index_of_nvml(const struct vgpu_self *self, nvmlDevice_t dev);

/* Total memory vGPU device i shows: its quota (read live: the mediator may
 * change it), or the GPU's memory. */
uint64_t vgpu_self_total(const struct vgpu_self *self, int i);
/* Bytes the vGPU uses on device i (every process, overhead included). */
uint64_t vgpu_self_used(const struct vgpu_self *self, int i);
