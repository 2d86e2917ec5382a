/*
 * NVML's topology: devices in pairs behind a PCIe switch (0 and 1, 2 and
 * 3, ...), the two of a pair linked by NVLink.
 */
#include "test/fake/nvml/fake_nvml.h"

static nvmlGpuTopologyLevel_t distance(int a, int b)
{
    return a == b ? NVML_TOPOLOGY_INTERNAL : a / 2 == b / 2 ? NVML_TOPOLOGY_SINGLE : NVML_TOPOLOGY_HOSTBRIDGE;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t d1, nvmlDevice_t d2, nvmlGpuTopologyLevel_t *path)
{
    nvmlReturn_t r = fake_check_device(d1);
    if (r == NVML_SUCCESS)
        r = fake_check_device(d2);
    if (r == NVML_SUCCESS && !path)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        *path = distance(d1->index, d2->index);
    return r;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t d1, nvmlDevice_t d2, nvmlGpuP2PCapsIndex_t caps,
                                    nvmlGpuP2PStatus_t *status)
{
    nvmlReturn_t r = fake_check_device(d1);
    if (r == NVML_SUCCESS)
        r = fake_check_device(d2);
    if (r == NVML_SUCCESS && (!status || caps >= NVML_P2P_CAPS_INDEX_UNKNOWN))
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        *status = d1 == d2 ? NVML_P2P_STATUS_NOT_SUPPORTED : NVML_P2P_STATUS_OK;
    return r;
}

/* The devices within level of near (every one when near < 0), by NVML's
 * size protocol: *count 0 or no array asks how many. */
static nvmlReturn_t device_list(int near, nvmlGpuTopologyLevel_t level, unsigned *count, nvmlDevice_t *out)
{
    unsigned n = 0, room = out ? *count : 0;
    for (int i = 0; i < fakegpu_config()->devices; i++) {
        if (near >= 0 && (i == near || distance(near, i) > level))
            continue;
        if (n < room)
            out[n] = &fake_devices[i];
        n++;
    }
    nvmlReturn_t r = room && room < n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    *count = n;
    return r;
}

nvmlReturn_t nvmlDeviceGetTopologyNearestGpus(nvmlDevice_t dev, nvmlGpuTopologyLevel_t level, unsigned int *count,
                                              nvmlDevice_t *out)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r == NVML_SUCCESS && !count)
        r = NVML_ERROR_INVALID_ARGUMENT;
    return r == NVML_SUCCESS ? device_list(dev->index, level, count, out) : r;
}

nvmlReturn_t nvmlSystemGetTopologyGpuSet(unsigned int cpu, unsigned int *count, nvmlDevice_t *out)
{
    (void)cpu;
    fake_count_call();
    if (!fake_initialised())
        return NVML_ERROR_UNINITIALIZED;
    return count ? device_list(-1, NVML_TOPOLOGY_SYSTEM, count, out) : NVML_ERROR_INVALID_ARGUMENT;
}

/* Link 0 of a device reaches the other of its pair; it has no other link. */
static nvmlReturn_t nvlink_remote(nvmlDevice_t dev, unsigned link, nvmlPciInfo_t *pci)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r != NVML_SUCCESS)
        return r;
    int peer = dev->index ^ 1;
    if (link != 0 || peer >= fakegpu_config()->devices)
        return NVML_ERROR_NOT_SUPPORTED;
    return fake_pci_info(&fake_devices[peer], pci);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t dev, unsigned int link, nvmlPciInfo_t *pci)
{
    return nvlink_remote(dev, link, pci);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned int link, nvmlPciInfo_t *pci)
{
    return nvlink_remote(dev, link, pci);
}
