/*
 * NVML's utilization: the device time of the last second, of the device
 * and of each process that ran kernels there (../gpu/usage.c).
 */
#define _GNU_SOURCE
#include "test/fake/nvml/fake_nvml.h"
#include "test/fake/gpu/busy.h"

#include <time.h>

static unsigned long long clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static unsigned percent(unsigned long long busy_ns)
{
    return (unsigned)((busy_ns * 100 + FAKEGPU_BUSY_WINDOW_NS / 2) / FAKEGPU_BUSY_WINDOW_NS);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *utilization)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r == NVML_SUCCESS && !utilization)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r != NVML_SUCCESS)
        return r;
    unsigned long long busy;
    fakegpu_state_busy(dev->index, clock_ns(CLOCK_MONOTONIC), &busy, NULL, 0);
    utilization->gpu = percent(busy);
    utilization->memory = 0; /* kernels of the fake touch no device memory bandwidth worth telling */
    return NVML_SUCCESS;
}

/*
 * One sample per process that ran kernels in the last second, taken now
 * (none when the caller has seen one of now or later), by NVML's size
 * protocol: *count in = the capacity of the caller's array (has_array: it
 * gave one), out = the samples there are; NOT_FOUND when there are none.
 * On NVML_SUCCESS, busy and *now_us hold them.
 */
static nvmlReturn_t samples(nvmlDevice_t dev, unsigned long long last_seen_us, int has_array, unsigned *count,
                            struct fakegpu_proc_figure *busy, unsigned long long *now_us)
{
    *now_us = clock_ns(CLOCK_REALTIME) / 1000;
    unsigned long long device;
    unsigned n = *now_us > last_seen_us
                     ? fakegpu_state_busy(dev->index, clock_ns(CLOCK_MONOTONIC), &device, busy, FAKEGPU_MAX_PROCS)
                     : 0;
    n = n < FAKEGPU_MAX_PROCS ? n : FAKEGPU_MAX_PROCS;
    nvmlReturn_t r = n == 0                     ? NVML_ERROR_NOT_FOUND
                     : !has_array || *count < n ? NVML_ERROR_INSUFFICIENT_SIZE
                                                : NVML_SUCCESS;
    *count = n;
    return r;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r == NVML_SUCCESS && !processSamplesCount)
        r = NVML_ERROR_INVALID_ARGUMENT;
    struct fakegpu_proc_figure busy[FAKEGPU_MAX_PROCS];
    unsigned long long now_us;
    if (r == NVML_SUCCESS)
        r = samples(dev, lastSeenTimeStamp, utilization != NULL, processSamplesCount, busy, &now_us);
    for (unsigned i = 0; r == NVML_SUCCESS && i < *processSamplesCount; i++)
        utilization[i] = (nvmlProcessUtilizationSample_t){ .pid = (unsigned)busy[i].pid,
                                                           .timeStamp = now_us,
                                                           .smUtil = percent(busy[i].value) };
    return r;
}

nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t dev, nvmlProcessesUtilizationInfo_t *info)
{
    nvmlReturn_t r = fake_check_device(dev);
    if (r == NVML_SUCCESS && !info)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && info->version != nvmlProcessesUtilizationInfo_v1)
        r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    struct fakegpu_proc_figure busy[FAKEGPU_MAX_PROCS];
    unsigned long long now_us;
    if (r == NVML_SUCCESS)
        r = samples(dev, info->lastSeenTimeStamp, info->procUtilArray != NULL, &info->processSamplesCount, busy,
                    &now_us);
    for (unsigned i = 0; r == NVML_SUCCESS && i < info->processSamplesCount; i++)
        info->procUtilArray[i] = (nvmlProcessUtilizationInfo_v1_t){ .timeStamp = now_us,
                                                                    .pid = (unsigned)busy[i].pid,
                                                                    .smUtil = percent(busy[i].value) };
    return r;
}
