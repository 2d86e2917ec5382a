/* See gpus.h. */
#define _GNU_SOURCE
#include "tools/setup/gpus.h"

#include "common/error.h"
#include "forwarder/real_nvml.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef nvmlReturn_t (*minor_fn)(nvmlDevice_t, unsigned int *);

/* nvmlDeviceGetMinorNumber from the copy of NVML the backend's
 * vgpu_real_nvml() opened (found by the pathfinder, loaded RTLD_LOCAL, so
 * reached through one of its functions rather than by name). */
static minor_fn nvml_minor(const struct vgpu_real_nvml *nvml)
{
    Dl_info info;
    if (!dladdr((void *)nvml->count, &info) || !info.dli_fname)
        return NULL;
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    return h ? (minor_fn)dlsym(h, "nvmlDeviceGetMinorNumber") : NULL;
}

int setup_gpus_resolve(const char *const *tokens, int n, struct setup_gpu *out, char *err, size_t errlen)
{
    const char *why = NULL;
    const struct vgpu_real_nvml *nvml = vgpu_real_nvml(&why);
    if (!nvml)
        return vgpu_fail(err, errlen, "cannot find the GPUs' device files: %s; run vgpu-setup on the GPU host, with "
                         "the NVIDIA driver loaded", why);
    minor_fn minor = nvml_minor(nvml);
    if (!minor)
        return vgpu_fail(err, errlen, "the driver's NVML has no nvmlDeviceGetMinorNumber");
    unsigned count = 0;
    if (nvml->count(&count) != NVML_SUCCESS)
        count = 0;
    for (int i = 0; i < n; i++) {
        nvmlDevice_t h;
        bool uuid = strncasecmp(tokens[i], "GPU-", 4) == 0;
        nvmlReturn_t r = uuid ? nvml->by_uuid(tokens[i], &h) : nvml->by_index((unsigned)atoi(tokens[i]), &h);
        if (r != NVML_SUCCESS)
            return vgpu_fail(err, errlen, "no GPU %s on this machine: it has %u (`nvidia-smi -L` lists them by index "
                             "and UUID)", tokens[i], count);
        if (minor(h, &out[i].minor) != NVML_SUCCESS || nvml->uuid(h, out[i].uuid, sizeof(out[i].uuid)) != NVML_SUCCESS)
            return vgpu_fail(err, errlen, "the driver's NVML cannot describe GPU %s", tokens[i]);
    }
    return 0;
}
