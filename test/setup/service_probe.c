/*
 * What a service's program sees of the GPU, for the drop-in emulation
 * (dropin_run.py): which library answers for libcuda.so.1, the devices
 * CUDA shows with their memory and PCI ids, and the variables a drop-in
 * sets for the program's own sake.  One "key=value" line each.
 */
#define _GNU_SOURCE
#include "test/common/client_util.h"

int main(void)
{
    (void)nvml_handle; /* client_util.h's; this probe asks CUDA only */
    CUresult r = F(cuInit)(0);
    printf("libcuda=%s\n", in_library((void *)F(cuInit), "libvgpu-cuda") ? "vgpu" : "other");
    printf("cuInit=%d\n", (int)r);
    int n = 0;
    if (r == CUDA_SUCCESS)
        CU(F(cuDeviceGetCount)(&n));
    printf("devices=%d\n", n);
    for (int i = 0; i < n; i++) {
        CUdevice d;
        size_t total = 0;
        char bus[32] = "";
        CU(F(cuDeviceGet)(&d, i));
        CU(F(cuDeviceTotalMem_v2)(&total, d));
        CU(F(cuDeviceGetPCIBusId)(bus, sizeof(bus), d));
        printf("device%d.total=%zu\ndevice%d.pci=%s\n", i, total, i, bus);
    }
    const char *vulkan = getenv("OLLAMA_VULKAN"), *bar0 = getenv("VGPU_BAR0");
    printf("OLLAMA_VULKAN=%s\n", vulkan ? vulkan : "(unset)");
    printf("VGPU_BAR0=%s\n", bar0 ? bar0 : "(unset)");
    return failures ? 1 : 0;
}
