/* NVML's topology, peer-to-peer and NVLink queries: only the vGPU's devices. */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_nvml_slots.h"

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetTopologyNearestGpus(nvmlDevice_t device, nvmlGpuTopologyLevel_t level,
                                                          unsigned int *count, nvmlDevice_t *deviceArray)
{
    int r = count ? vgpu_backend_nvml_nearest_gpus(device, level, count, deviceArray) : NVML_ERROR_INVALID_ARGUMENT;
    if (r < 0)
        r = VGPU_REAL_NVML(nvmlDeviceGetTopologyNearestGpus)(device, level, count, deviceArray);
    vgpu_trace("nvmlDeviceGetTopologyNearestGpus", r, "%p level %d -> %u", (void *)device, (int)level,
               count ? *count : 0u);
    return (nvmlReturn_t)r;
}

VGPU_EXPORT nvmlReturn_t nvmlSystemGetTopologyGpuSet(unsigned int cpuNumber, unsigned int *count,
                                                     nvmlDevice_t *deviceArray)
{
    int r = count ? vgpu_backend_nvml_gpu_set(cpuNumber, count, deviceArray) : NVML_ERROR_INVALID_ARGUMENT;
    if (r < 0)
        r = VGPU_REAL_NVML(nvmlSystemGetTopologyGpuSet)(cpuNumber, count, deviceArray);
    vgpu_trace("nvmlSystemGetTopologyGpuSet", r, "cpu %u -> %u", cpuNumber, count ? *count : 0u);
    return (nvmlReturn_t)r;
}

/* ---- queries that only take handles: the driver's, between the vGPU's devices ---- */

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                                nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t *p2pStatus)
{
    nvmlReturn_t r = vgpu_backend_nvml_device_check(device1);
    if (r == NVML_SUCCESS)
        r = vgpu_backend_nvml_device_check(device2);
    if (r == NVML_SUCCESS)
        r = VGPU_REAL_NVML(nvmlDeviceGetP2PStatus)(device1, device2, p2pIndex, p2pStatus);
    vgpu_trace("nvmlDeviceGetP2PStatus", r, "%p %p caps %d -> %d", (void *)device1, (void *)device2, (int)p2pIndex,
               r || !p2pStatus ? -1 : (int)*p2pStatus);
    return r;
}

VGPU_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                             nvmlGpuTopologyLevel_t *pathInfo)
{
    nvmlReturn_t r = vgpu_backend_nvml_device_check(device1);
    if (r == NVML_SUCCESS)
        r = vgpu_backend_nvml_device_check(device2);
    if (r == NVML_SUCCESS)
        r = VGPU_REAL_NVML(nvmlDeviceGetTopologyCommonAncestor)(device1, device2, pathInfo);
    vgpu_trace("nvmlDeviceGetTopologyCommonAncestor", r, "%p %p -> %d", (void *)device1, (void *)device2,
               r || !pathInfo ? -1 : (int)*pathInfo);
    return r;
}

#define ONE_DEVICE(name, proto_args, call_args, argfmt, ...)                                   \
    VGPU_EXPORT nvmlReturn_t name proto_args                                                   \
    {                                                                                          \
        nvmlReturn_t r = vgpu_backend_nvml_device_check(device);                               \
        if (r == NVML_SUCCESS)                                                                 \
            r = VGPU_REAL_NVML(name) call_args;                                                \
        vgpu_trace(#name, r, "%p " argfmt, (void *)device, __VA_ARGS__);                       \
        return r;                                                                              \
    }

/* The peer's PCI address may be a GPU outside the vGPU: an address, never
 * a handle (looking it up answers NOT_FOUND). */
ONE_DEVICE(nvmlDeviceGetNvLinkRemotePciInfo, (nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci),
           (device, link, pci), "link %u", link)
ONE_DEVICE(nvmlDeviceGetNvLinkRemotePciInfo_v2, (nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci),
           (device, link, pci), "link %u", link)
/* A minor number names the device file /dev/nvidiaN, which is the same
 * file under vgpu: it is not a place in the enumeration, so not remapped. */
ONE_DEVICE(nvmlDeviceGetMinorNumber, (nvmlDevice_t device, unsigned int *minorNumber), (device, minorNumber),
           "-> %u", minorNumber ? *minorNumber : 0u)
