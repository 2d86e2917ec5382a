/*
 * What the parts of the fake libnvidia-ml share: the device handles and the
 * checks every call makes.  Hidden: the library exports only nvml* names
 * and fakenvml_calls.  Prototypes come from include/vgpu/nvml_abi.h.
 */
#ifndef FAKE_NVML_H
#define FAKE_NVML_H

#include "test/fake/gpu/fakegpu.h"
#include "vgpu/nvml_abi.h"

struct nvmlDevice_st {
    int index;
};

/* Owned by devices.c: every device's handle, numbered by each nvmlInit
 * (init.c) under its lock. */
FAKEGPU_HIDDEN extern struct nvmlDevice_st fake_devices[FAKEGPU_MAX_DEVICES];

/* init.c */
/* Counts an nvml* call, for fakenvml_calls(). */
FAKEGPU_HIDDEN void fake_count_call(void);
/* Whether nvmlInit* was called more often than nvmlShutdown. */
FAKEGPU_HIDDEN int fake_initialised(void);
/* Copies src to dst of len bytes, or says that it is too small. */
FAKEGPU_HIDDEN nvmlReturn_t fake_copy_string(char *dst, unsigned int len, const char *src);

/* devices.c */
/* Entry checks shared by every device query; counts the call. */
FAKEGPU_HIDDEN nvmlReturn_t fake_check_device(nvmlDevice_t dev);
/* A device's PCI location (checks and counts the call). */
FAKEGPU_HIDDEN nvmlReturn_t fake_pci_info(nvmlDevice_t dev, nvmlPciInfo_t *pci);

#endif /* FAKE_NVML_H */
