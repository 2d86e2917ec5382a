/*
 * The devices NVML shows (every device of the fake GPU, whatever
 * CUDA_VISIBLE_DEVICES says): their count, handles and identity, their PCI
 * location, and field values.
 */
#define _GNU_SOURCE
#include "test/fake/nvml/fake_nvml.h"

#include <stdio.h>
#include <string.h>

/* Owned by this file; each nvmlInit (init.c) numbers them. */
struct nvmlDevice_st fake_devices[FAKEGPU_MAX_DEVICES];

/* Entry checks shared by every device query. */
nvmlReturn_t fake_check_device(nvmlDevice_t dev)
{
    fake_count_call();
    if (!fake_initialised())
        return NVML_ERROR_UNINITIALIZED;
    if (!dev || dev < fake_devices || dev >= fake_devices + fakegpu_config()->devices)
        return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

static nvmlReturn_t count(unsigned int *n)
{
    fake_count_call();
    if (!fake_initialised())
        return NVML_ERROR_UNINITIALIZED;
    if (!n)
        return NVML_ERROR_INVALID_ARGUMENT;
    *n = (unsigned)fakegpu_config()->devices;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *n)
{
    return count(n);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    return count(n);
}

/* Handle lookup without counting the call (callers count it once). */
static nvmlReturn_t lookup(int index, nvmlDevice_t *dev)
{
    if (!fake_initialised())
        return NVML_ERROR_UNINITIALIZED;
    if (!dev || index < 0 || index >= fakegpu_config()->devices)
        return NVML_ERROR_INVALID_ARGUMENT;
    *dev = &fake_devices[index];
    return NVML_SUCCESS;
}

static nvmlReturn_t by_index(int index, nvmlDevice_t *dev)
{
    fake_count_call();
    return lookup(index, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *dev)
{
    return by_index((int)index, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev)
{
    return by_index((int)index, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev)
{
    char s[48];
    fake_count_call();
    for (int i = 0; uuid && i < fakegpu_config()->devices; i++) {
        fakegpu_device_uuid_string(i, s);
        if (strcmp(s, uuid) == 0)
            return lookup(i, dev);
    }
    return fake_initialised() ? NVML_ERROR_NOT_FOUND : NVML_ERROR_UNINITIALIZED;
}

static nvmlReturn_t by_pci(const char *bus_id, nvmlDevice_t *dev)
{
    fake_count_call();
    int i = bus_id ? fakegpu_device_from_pci_bus_id(bus_id) : -1;
    if (i >= 0)
        return lookup(i, dev);
    return fake_initialised() ? NVML_ERROR_NOT_FOUND : NVML_ERROR_UNINITIALIZED;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus_id, nvmlDevice_t *dev)
{
    return by_pci(bus_id, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *dev)
{
    return by_pci(bus_id, dev);
}

static nvmlReturn_t index_of(nvmlDevice_t dev, unsigned int *index)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r == NVML_SUCCESS && !index)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        *index = (unsigned)dev->index;
    return r;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int *index)
{
    return index_of(dev, index);
}

/* Not through nvmlDeviceGetIndex: under vgpu that name is vgpu's, which
 * renumbers the device. */
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned int *minor)
{
    return index_of(dev, minor);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length)
{
    nvmlReturn_t r = fake_check_device(dev);
    char s[32];
    snprintf(s, sizeof(s), "Fake GPU %d", r == NVML_SUCCESS ? dev->index : 0);
    return r == NVML_SUCCESS ? fake_copy_string(name, length, s) : r;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int length)
{
    nvmlReturn_t r = fake_check_device(dev);
    char s[48];
    if (r != NVML_SUCCESS)
        return r;
    fakegpu_device_uuid_string(dev->index, s);
    return fake_copy_string(uuid, length, s);
}

nvmlReturn_t fake_pci_info(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r == NVML_SUCCESS && !pci)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r != NVML_SUCCESS)
        return r;
    memset(pci, 0, sizeof(*pci));
    pci->bus = fakegpu_device_pci_bus(dev->index);
    snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT, 0u, pci->bus, 0u);
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT, 0u, pci->bus, 0u);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    return fake_pci_info(dev, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    return fake_pci_info(dev, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    return fake_pci_info(dev, pci);
}

/* Field values: each field's id times 10 plus the device's index, as an
 * unsigned long long, at a fixed time; field 0 is not supported. */
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t dev, int count, nvmlFieldValue_t *values)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r == NVML_SUCCESS && (count <= 0 || !values))
        r = NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; r == NVML_SUCCESS && i < count; i++) {
        nvmlFieldValue_t *v = &values[i];
        v->timestamp = 1700000000000000LL;
        v->latencyUsec = 0;
        v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        v->nvmlReturn = v->fieldId ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
        v->value.ullVal = (unsigned long long)v->fieldId * 10 + dev->index;
    }
    return r;
}
