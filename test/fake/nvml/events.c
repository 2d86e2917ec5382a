/*
 * Events: critical XIDs, as a test injects them.  FAKENVML_XID_FILE names
 * a file of lines "INDEX XID" (a test appends them); each event set reads
 * the lines it has not given yet, for the devices registered to it.
 */
#define _GNU_SOURCE
#include "test/fake/nvml/fake_nvml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct nvmlEventSet_st {
    unsigned long long types[FAKEGPU_MAX_DEVICES]; /* registered, per device */
    long offset;                                   /* into the file: lines given so far */
};

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    fake_count_call();
    if (!fake_initialised())
        return NVML_ERROR_UNINITIALIZED;
    if (!set || !(*set = calloc(1, sizeof(**set))))
        return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types, nvmlEventSet_t set)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r != NVML_SUCCESS || !set)
        return r != NVML_SUCCESS ? r : NVML_ERROR_INVALID_ARGUMENT;
    if (types & ~nvmlEventTypeXidCriticalError)
        return NVML_ERROR_NOT_SUPPORTED;
    set->types[dev->index] |= types;
    return NVML_SUCCESS;
}

/* The next line for a registered device, if the file has one. */
static int next_xid(nvmlEventSet_t set, nvmlEventData_t *data)
{
    const char *path = getenv("FAKENVML_XID_FILE");
    FILE *f = path ? fopen(path, "re") : NULL;
    int found = 0;
    unsigned index;
    unsigned long long xid;
    if (!f)
        return 0;
    char line[128];
    fseek(f, set->offset, SEEK_SET);
    while (!found && fgets(line, sizeof(line), f) && strchr(line, '\n')) {
        set->offset = ftell(f);
        if (sscanf(line, "%u %llu", &index, &xid) == 2 && (int)index < fakegpu_config()->devices &&
            (set->types[index] & nvmlEventTypeXidCriticalError)) {
            *data = (nvmlEventData_t){ .device = &fake_devices[index],
                                       .eventType = nvmlEventTypeXidCriticalError,
                                       .eventData = xid };
            found = 1;
        }
    }
    fclose(f);
    return found;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    fake_count_call();
    if (!set || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned waited = 0;; waited += 20) {
        if (next_xid(set, data))
            return NVML_SUCCESS;
        if (waited >= timeoutms)
            return NVML_ERROR_TIMEOUT;
        usleep(20000);
    }
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    fake_count_call();
    free(set);
    return NVML_SUCCESS;
}
