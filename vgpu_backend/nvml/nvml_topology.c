/*
 * Topology, peer-to-peer and NVLink queries for a vGPU: they may name and
 * reach only the vGPU's devices.  The vGPU hands out the driver's own device
 * handles, so a query between two of them is the driver's to answer; a
 * handle of any other device (which the process can only have made up, or
 * kept from before it joined) is refused as NVML refuses a bad handle.
 * Device lists the driver answers are cut to the vGPU's devices.
 */
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_backend/nvml/nvml_view.h"
#include "vgpu_nvml_slots.h"

#include <stdlib.h>

nvmlReturn_t vgpu_backend_nvml_device_check(nvmlDevice_t dev)
{
    const struct vgpu_self *self;
    int i;
    return vgpu_nvml_view_device(dev, &self, &i) > 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_SUCCESS;
}

/* One question whose answer is a device list: nearest GPUs or a CPU's GPUs. */
struct device_list_query {
    nvmlDevice_t dev;
    nvmlGpuTopologyLevel_t level;
    unsigned cpu;
    bool by_cpu;
};

static nvmlReturn_t ask(const struct device_list_query *q, unsigned *count, nvmlDevice_t *out)
{
    return q->by_cpu ? VGPU_REAL_NVML(nvmlSystemGetTopologyGpuSet)(q->cpu, count, out)
                     : VGPU_REAL_NVML(nvmlDeviceGetTopologyNearestGpus)(q->dev, q->level, count, out);
}

/*
 * The driver's list, less every device outside the vGPU, by NVML's size
 * protocol for these queries: *count 0 (or no array) asks how many; a
 * smaller room than that is INSUFFICIENT_SIZE with *count how many.
 */
static nvmlReturn_t vgpu_devices(const struct vgpu_self *self, const struct device_list_query *q, unsigned *count,
                                 nvmlDevice_t *out)
{
    unsigned n = 0;
    nvmlReturn_t r = ask(q, &n, NULL);
    if (r != NVML_SUCCESS)
        return r;
    nvmlDevice_t *all = n ? calloc(n, sizeof(*all)) : NULL;
    if (n && !all)
        return NVML_ERROR_MEMORY;
    if (n)
        r = ask(q, &n, all);
    unsigned kept = 0;
    for (unsigned k = 0; r == NVML_SUCCESS && k < n; k++)
        if (vgpu_self_index_of_nvml(self, all[k]) >= 0)
            all[kept++] = all[k];
    if (r == NVML_SUCCESS) {
        unsigned room = out ? *count : 0;
        if (room && room < kept)
            r = NVML_ERROR_INSUFFICIENT_SIZE;
        for (unsigned k = 0; room >= kept && k < kept; k++)
            out[k] = all[k];
        *count = kept;
    }
    free(all);
    return r;
}

int vgpu_backend_nvml_nearest_gpus(nvmlDevice_t dev, nvmlGpuTopologyLevel_t level, unsigned int *count,
                                   nvmlDevice_t *out)
{
    const struct vgpu_self *self;
    int i, shaped = vgpu_nvml_view_device(dev, &self, &i);
    if (shaped != 0)
        return shaped;
    return vgpu_devices(self, &(struct device_list_query){ .dev = dev, .level = level }, count, out);
}

int vgpu_backend_nvml_gpu_set(unsigned int cpu, unsigned int *count, nvmlDevice_t *out)
{
    const struct vgpu_self *self;
    int i;
    if (vgpu_nvml_view_device(NULL, &self, &i) < 0)
        return -1;
    return vgpu_devices(self, &(struct device_list_query){ .cpu = cpu, .by_cpu = true }, count, out);
}
