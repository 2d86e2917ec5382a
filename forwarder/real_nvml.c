/* The driver's NVML for the backend; see real_nvml.h. */
#define _GNU_SOURCE
#include "forwarder/real_nvml.h"

#include "forwarder/pathfinder.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Written once by open_once(), read-only afterwards. */
static struct vgpu_real_nvml api;
static const struct vgpu_real_nvml *api_ready;
static char failure[1024];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void open_once(void)
{
    struct vgpu_found *found = calloc(1, sizeof(*found)); /* 4 KiB path: not on a caller's stack */
    char looked[768];
    if (!found || vgpu_pathfind(&vgpu_nvml_spec, found, looked, sizeof(looked)) != 0) {
        snprintf(failure, sizeof(failure), "the driver's NVML was not found (%s); set VGPU_REAL_NVML",
                 found ? looked : "out of memory");
        free(found);
        return;
    }
    void *h = found->handle;
    nvmlReturn_t (*init)(void) = (nvmlReturn_t(*)(void))dlsym(h, "nvmlInit_v2");
    api.count = (__typeof__(api.count))dlsym(h, "nvmlDeviceGetCount_v2");
    api.by_index = (__typeof__(api.by_index))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    api.by_uuid = (__typeof__(api.by_uuid))dlsym(h, "nvmlDeviceGetHandleByUUID");
    api.uuid = (__typeof__(api.uuid))dlsym(h, "nvmlDeviceGetUUID");
    api.name = (__typeof__(api.name))dlsym(h, "nvmlDeviceGetName");
    api.memory = (__typeof__(api.memory))dlsym(h, "nvmlDeviceGetMemoryInfo");
    api.processes = (__typeof__(api.processes))dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v3");
    api.pci = (__typeof__(api.pci))dlsym(h, "nvmlDeviceGetPciInfo_v3");
    api.process_utilization = (__typeof__(api.process_utilization))dlsym(h, "nvmlDeviceGetProcessUtilization");
    api.event_set_create = (__typeof__(api.event_set_create))dlsym(h, "nvmlEventSetCreate");
    api.register_events = (__typeof__(api.register_events))dlsym(h, "nvmlDeviceRegisterEvents");
    api.event_set_wait = (__typeof__(api.event_set_wait))dlsym(h, "nvmlEventSetWait_v2");
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (init && api.count && api.by_index && api.by_uuid && api.uuid && api.name && api.memory && api.processes)
        r = init();
    if (r != NVML_SUCCESS)
        snprintf(failure, sizeof(failure), "the driver's NVML at %.900s did not initialise (error %d)", found->path,
                 (int)r);
    else
        api_ready = &api;
    free(found);
}

const struct vgpu_real_nvml *vgpu_real_nvml(const char **why)
{
    pthread_once(&once, open_once);
    if (why)
        *why = failure;
    return api_ready;
}

nvmlProcessInfo_t *vgpu_real_nvml_processes(const struct vgpu_real_nvml *nvml, nvmlDevice_t dev, unsigned *n)
{
    unsigned want = 0;
    nvmlReturn_t r = nvml->processes(dev, &want, NULL);
    for (int tries = 0; tries < 4 && (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE); tries++) {
        unsigned cap = want + 16; /* room for processes that start meanwhile */
        nvmlProcessInfo_t *list = malloc(cap * sizeof(*list));
        if (!list)
            return NULL;
        want = cap;
        r = nvml->processes(dev, &want, list);
        if (r == NVML_SUCCESS) {
            *n = want;
            return list;
        }
        free(list);
    }
    return NULL;
}

nvmlReturn_t vgpu_real_nvml_utilization(const struct vgpu_real_nvml *nvml, nvmlDevice_t dev,
                                        unsigned long long last_seen_us, nvmlProcessUtilizationSample_t **out,
                                        unsigned *n)
{
    *out = NULL;
    *n = 0;
    if (!nvml->process_utilization)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    unsigned want = 0;
    nvmlReturn_t r = nvml->process_utilization(dev, NULL, &want, last_seen_us);
    for (int tries = 0; tries < 4 && (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE); tries++) {
        unsigned cap = want + 16; /* room for samples taken meanwhile */
        nvmlProcessUtilizationSample_t *list = malloc(cap * sizeof(*list));
        if (!list)
            return NVML_ERROR_MEMORY;
        want = cap;
        r = nvml->process_utilization(dev, list, &want, last_seen_us);
        if (r == NVML_SUCCESS) {
            *out = list;
            *n = want;
            return r;
        }
        free(list);
    }
    return r == NVML_ERROR_NOT_FOUND ? NVML_SUCCESS : r;
}
