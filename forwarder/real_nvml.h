/*
 * The driver's own NVML, opened through the pathfinder, for what the backend
 * must know of the physical GPUs (UUIDs, memory, per-process usage) in
 * either library.  In libvgpu-nvml this is the same library object its
 * dispatch table forwards to.
 */
#pragma once

#include "vgpu/nvml_abi.h"

struct vgpu_real_nvml {
    nvmlReturn_t (*count)(unsigned int *);
    nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
    nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *); /* NULL where the driver lacks it: optional */
    /* Optional too (the mediator's views): nvmlDeviceGetProcessUtilization. */
    nvmlReturn_t (*process_utilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
                                        unsigned long long);
    /* Optional too (the mediator's health): critical XID events. */
    nvmlReturn_t (*event_set_create)(nvmlEventSet_t *);
    nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
    nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
};

/* The real NVML, initialised (once; never shut down), or NULL with the
 * reason in why (static storage). */
const struct vgpu_real_nvml *vgpu_real_nvml(const char **why);

/*
 * Every process the driver lists on dev, however many (the list can grow
 * between the sizing call and the listing: retried).  Returns a malloc'd
 * array and its length in *n, or NULL.
 */
nvmlProcessInfo_t *vgpu_real_nvml_processes(const struct vgpu_real_nvml *nvml, nvmlDevice_t dev, unsigned *n);

/*
 * The driver's per-process utilization samples on dev taken after
 * last_seen_us (CPU time in microseconds, as NVML stamps them), however
 * many.  NVML_SUCCESS with a malloc'd array in *out and its length in *n
 * (none: NULL and 0, which NVML says as NOT_FOUND), or the driver's error
 * (NVML_ERROR_FUNCTION_NOT_FOUND where it lacks the call).
 */
nvmlReturn_t vgpu_real_nvml_utilization(const struct vgpu_real_nvml *nvml, nvmlDevice_t dev,
                                        unsigned long long last_seen_us, nvmlProcessUtilizationSample_t **out,
                                        unsigned *n);
