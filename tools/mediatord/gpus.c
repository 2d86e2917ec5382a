/* The physical GPUs and the config checked against them; see gpus.h. */
#define _GNU_SOURCE
#include "tools/mediatord/gpus.h"

#include "common/error.h"
#include "forwarder/real_nvml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int med_gpus_discover(struct med_gpus *g, char *err, size_t errlen)
{
    const char *why = NULL;
    const struct vgpu_real_nvml *nvml = vgpu_real_nvml(&why);
    memset(g, 0, sizeof(*g));
    if (!nvml)
        return vgpu_fail(err, errlen, "%s", why);
    unsigned count = 0;
    nvmlReturn_t r = nvml->count(&count);
    if (r != NVML_SUCCESS)
        return vgpu_fail(err, errlen, "the driver's NVML could not count the GPUs (error %d)", (int)r);
    for (unsigned i = 0; i < count && g->n < MED_MAX_GPUS; i++) {
        struct med_gpu *d = &g->gpu[g->n];
        nvmlDevice_t h;
        nvmlMemory_t mem;
        if (nvml->by_index(i, &h) != NVML_SUCCESS || nvml->uuid(h, d->uuid, sizeof(d->uuid)) != NVML_SUCCESS ||
            nvml->memory(h, &mem) != NVML_SUCCESS)
            return vgpu_fail(err, errlen, "the driver's NVML cannot describe GPU %u", i);
        if (nvml->name(h, d->name, sizeof(d->name)) != NVML_SUCCESS)
            snprintf(d->name, sizeof(d->name), "GPU %u", i);
        nvmlPciInfo_t pci;
        if (nvml->pci && nvml->pci(h, &pci) == NVML_SUCCESS)
            snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%.*s", (int)sizeof(pci.busId), pci.busId);
        d->index = i;
        d->total = mem.total;
        g->n++;
    }
    return 0;
}

const struct med_gpu *med_gpus_find(const struct med_gpus *g, const char *token)
{
    bool uuid = strncasecmp(token, "GPU-", 4) == 0;
    for (int i = 0; i < g->n; i++)
        if (uuid ? strcasecmp(g->gpu[i].uuid, token) == 0 : g->gpu[i].index == (unsigned)atoi(token))
            return &g->gpu[i];
    return NULL;
}

int med_gpus_check(const struct med_gpus *g, const struct med_config *c, char *err, size_t errlen)
{
    uint64_t memory[MED_MAX_GPUS] = { 0 };
    unsigned compute[MED_MAX_GPUS] = { 0 };
    char users[MED_MAX_GPUS][512] = { { 0 } };
    for (int i = 0; i < c->nvgpus; i++) {
        const struct med_vgpu_conf *v = &c->vgpu[i];
        for (int d = 0; d < v->ndev; d++) {
            const struct med_gpu *gpu = med_gpus_find(g, v->devices[d]);
            if (!gpu)
                return vgpu_fail(err, errlen, "%s:%d: vGPU %s: no GPU %s on this machine (it has %d: 0-%d, as nvidia-smi "
                            "numbers them)", c->path, v->devices_line, v->name, v->devices[d], g->n, g->n - 1);
            for (int e = 0; e < d; e++)
                if (med_gpus_find(g, v->devices[e]) == gpu)
                    return vgpu_fail(err, errlen, "%s:%d: vGPU %s lists GPU %u twice (as %s and %s)", c->path,
                                v->devices_line, v->name, gpu->index, v->devices[e], v->devices[d]);
            int k = (int)(gpu - g->gpu);
            uint64_t quota = v->memory ? v->memory : gpu->total;
            if (quota > gpu->total)
                return vgpu_fail(err, errlen, "%s:%d: vGPU %s: memory = %.2f GiB is more than GPU %u (%s) has, %.2f GiB",
                            c->path, v->memory_line, v->name, quota / 1073741824.0, gpu->index, gpu->name,
                            gpu->total / 1073741824.0);
            memory[k] += quota;
            compute[k] += v->compute;
            size_t used = strlen(users[k]);
            snprintf(users[k] + used, sizeof(users[k]) - used, "%s%s (%.2f GiB, %u%%)", used ? ", " : "", v->name,
                     quota / 1073741824.0, v->compute);
            if (c->oversubscribe)
                continue;
            if (memory[k] > gpu->total)
                return vgpu_fail(err, errlen, "%s:%d: GPU %u (%s, %.2f GiB) is oversubscribed: vGPUs %s take %.2f GiB of "
                            "it; lower their memory, or set oversubscribe = yes in [mediator]", c->path,
                            v->memory_line ? v->memory_line : v->line, gpu->index, gpu->name,
                            gpu->total / 1073741824.0, users[k], memory[k] / 1073741824.0);
            if (compute[k] > 100)
                return vgpu_fail(err, errlen, "%s:%d: GPU %u (%s) is oversubscribed: vGPUs %s take %u%% of its compute; "
                            "lower their compute, or set oversubscribe = yes in [mediator]", c->path,
                            v->compute_line ? v->compute_line : v->line, gpu->index, gpu->name, users[k],
                            compute[k]);
        }
    }
    return 0;
}
