/*
 * Utilization NVML shows for a vGPU device: its own processes' share of the
 * GPU, not the GPU's.  The driver samples each process's use of the GPU
 * (nvmlDeviceGetProcessUtilization, nvmlDeviceGetProcessesUtilizationInfo);
 * the vGPU's utilization is the sum of its processes' samples over the last
 * second, and the per-process queries list its processes alone.  The driver
 * names processes in the caller's PID namespace, as vgpu_nvml_processes_seen
 * does, so the two match in a container too.
 */
#define _GNU_SOURCE
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_backend/nvml/nvml_view.h"
#include "vgpu_nvml_slots.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* NVML's sample clock: microseconds of wall-clock time. */
static unsigned long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000u;
}

/* One call of the driver's, into a buffer of cap samples (NULL: the size
 * query), in the layout of the entry point asked (info: the _v1 info). */
static nvmlReturn_t ask(nvmlDevice_t dev, bool info, unsigned long long since, unsigned *count, void *buf)
{
    if (!info)
        return VGPU_REAL_NVML(nvmlDeviceGetProcessUtilization)(dev, buf, count, since);
    nvmlProcessesUtilizationInfo_t q = { .version = nvmlProcessesUtilizationInfo_v1, .processSamplesCount = *count,
                                         .lastSeenTimeStamp = since, .procUtilArray = buf };
    nvmlReturn_t r = VGPU_REAL_NVML(nvmlDeviceGetProcessesUtilizationInfo)(dev, &q);
    *count = q.processSamplesCount;
    return r;
}

/*
 * Every sample the driver has on dev newer than since, by either entry
 * point (info: nvmlDeviceGetProcessesUtilizationInfo), in a malloc'd
 * buffer of that entry point's layout.  NOT_FOUND from the driver (no
 * sample that new) is no sample: NVML_SUCCESS and *n 0.
 */
static nvmlReturn_t fetch(nvmlDevice_t dev, bool info, unsigned long long since, void **samples, unsigned *n)
{
    size_t size = info ? sizeof(nvmlProcessUtilizationInfo_v1_t) : sizeof(nvmlProcessUtilizationSample_t);
    *samples = NULL;
    *n = 0;
    for (int tries = 0; tries < 4; tries++) {
        unsigned want = 0;
        nvmlReturn_t r = ask(dev, info, since, &want, NULL);
        if (r == NVML_ERROR_NOT_FOUND || (r == NVML_SUCCESS && want == 0))
            return NVML_SUCCESS;
        if (r != NVML_SUCCESS && r != NVML_ERROR_INSUFFICIENT_SIZE)
            return r;
        unsigned cap = want + 16; /* room for processes that start meanwhile */
        void *buf = calloc(cap, size);
        if (!buf)
            return NVML_ERROR_MEMORY;
        r = ask(dev, info, since, &cap, buf);
        if (r == NVML_SUCCESS) {
            *samples = buf;
            *n = cap;
            return NVML_SUCCESS;
        }
        free(buf);
        if (r == NVML_ERROR_NOT_FOUND)
            return NVML_SUCCESS;
        if (r != NVML_ERROR_INSUFFICIENT_SIZE)
            return r;
    }
    return NVML_ERROR_INSUFFICIENT_SIZE;
}

static unsigned sample_pid(const void *samples, bool info, unsigned k)
{
    return info ? ((const nvmlProcessUtilizationInfo_v1_t *)samples)[k].pid
                : ((const nvmlProcessUtilizationSample_t *)samples)[k].pid;
}

/* Sample k's SM (or memory) utilization, in percent. */
static unsigned utilization(const void *samples, bool info, unsigned k, bool memory)
{
    if (info) {
        const nvmlProcessUtilizationInfo_v1_t *p = (const nvmlProcessUtilizationInfo_v1_t *)samples + k;
        return memory ? p->memUtil : p->smUtil;
    }
    const nvmlProcessUtilizationSample_t *p = (const nvmlProcessUtilizationSample_t *)samples + k;
    return memory ? p->memUtil : p->smUtil;
}

/*
 * The driver's samples on dev newer than since that belong to the vGPU's
 * processes, moved to the front of *samples (their count in *n).  Returns
 * the driver's answer; -1 when no vGPU shapes dev.
 */
static int vgpu_samples(nvmlDevice_t dev, bool info, unsigned long long since, void **samples, unsigned *n)
{
    *samples = NULL;
    *n = 0;
    const struct vgpu_self *self;
    int i, shaped = vgpu_nvml_view_device(dev, &self, &i);
    if (shaped != 0)
        return shaped;
    nvmlReturn_t r = fetch(dev, info, since, samples, n);
    if (r != NVML_SUCCESS || *n == 0)
        return r;
    unsigned np, kept = 0;
    struct vgpu_nvml_proc *procs = vgpu_nvml_processes_seen(self, i, false, &np);
    size_t size = info ? sizeof(nvmlProcessUtilizationInfo_v1_t) : sizeof(nvmlProcessUtilizationSample_t);
    for (unsigned k = 0; k < *n; k++)
        if (vgpu_nvml_has_pid(procs, np, sample_pid(*samples, info, k)))
            memmove((char *)*samples + kept++ * size, (char *)*samples + k * size, size);
    free(procs);
    *n = kept;
    return NVML_SUCCESS;
}

/* NVML's size protocol for the samples kept: *count in = the caller's
 * room (buffer NULL: none), out = how many there are; none is NOT_FOUND,
 * as the driver answers when it has no sample newer than asked. */
static nvmlReturn_t hand_over(const void *kept, unsigned n, size_t size, void *buffer, unsigned *count)
{
    unsigned room = buffer ? *count : 0;
    *count = n;
    if (n == 0)
        return NVML_ERROR_NOT_FOUND;
    if (n > room)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buffer, kept, n * size);
    return NVML_SUCCESS;
}

int vgpu_backend_nvml_process_utilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *samples,
                                          unsigned int *count, unsigned long long last_seen)
{
    void *kept;
    unsigned n;
    int r = vgpu_samples(dev, false, last_seen, &kept, &n);
    if (r == NVML_SUCCESS)
        r = hand_over(kept, n, sizeof(*samples), samples, count);
    free(kept);
    return r;
}

int vgpu_backend_nvml_processes_utilization(nvmlDevice_t dev, nvmlProcessesUtilizationInfo_t *info)
{
    if (info->version != nvmlProcessesUtilizationInfo_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    void *kept;
    unsigned n;
    int r = vgpu_samples(dev, true, info->lastSeenTimeStamp, &kept, &n);
    if (r == NVML_SUCCESS)
        r = hand_over(kept, n, sizeof(*info->procUtilArray), info->procUtilArray, &info->processSamplesCount);
    free(kept);
    return r;
}

int vgpu_backend_nvml_utilization(nvmlDevice_t dev, nvmlUtilization_t *u)
{
    /* The newer entry point where the driver has it, else the older. */
    unsigned long long since = now_us() - 1000000ull;
    void *kept;
    unsigned n;
    bool info = true;
    int r = vgpu_samples(dev, info, since, &kept, &n);
    if (r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_NOT_SUPPORTED ||
        r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
        info = false;
        r = vgpu_samples(dev, info, since, &kept, &n);
    }
    if (r == NVML_ERROR_FUNCTION_NOT_FOUND)
        r = NVML_ERROR_NOT_SUPPORTED; /* docs/reference/nvml.md: the GPU's figure would be other tenants' load */
    if (r != NVML_SUCCESS)
        return r;
    /* A process's samples over the second, averaged (a driver that samples
     * every 1/6 s gives several); the vGPU's share is the sum over its
     * processes, each taken at its first sample. */
    double sm = 0, mem = 0;
    for (unsigned k = 0; k < n; k++) {
        unsigned pid = sample_pid(kept, info, k), samples = 0, seen_before = 0;
        double s = 0, m = 0;
        for (unsigned j = 0; j < n && !seen_before; j++) {
            if (sample_pid(kept, info, j) != pid)
                continue;
            seen_before = j < k;
            samples++;
            s += utilization(kept, info, j, false);
            m += utilization(kept, info, j, true);
        }
        if (!seen_before) {
            sm += s / samples;
            mem += m / samples;
        }
    }
    free(kept);
    u->gpu = sm >= 100 ? 100u : (unsigned)(sm + 0.5);
    u->memory = mem >= 100 ? 100u : (unsigned)(mem + 0.5);
    return NVML_SUCCESS;
}
