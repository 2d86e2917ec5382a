/* The GPUs' health from the driver's XID events; see xid.h. */
#define _GNU_SOURCE
#include "tools/mediatord/health/xid.h"

#include "common/log.h"
#include "forwarder/real_nvml.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

/* Owned by its thread, which writes the words; the loop reads them. */
struct med_health {
    int n;
    unsigned index[MED_MAX_GPUS];
    nvmlDevice_t dev[MED_MAX_GPUS];
    _Atomic uint32_t xid[MED_MAX_GPUS];
    _Atomic uint64_t generation;
    nvmlEventSet_t set;
};

/*
 * XIDs an application causes (a fault in its kernel, a bad address, its
 * own reset of a channel): the GPU is fine for the next container.  The
 * NVIDIA device plugin skips the same ones.
 */
static int application_xid(unsigned long long xid)
{
    return xid == 13 || xid == 31 || xid == 43 || xid == 45 || xid == 68 || xid == 109;
}

static void mark(struct med_health *h, int i, uint32_t xid)
{
    uint32_t was = 0;
    if (atomic_compare_exchange_strong(&h->xid[i], &was, xid)) {
        atomic_fetch_add(&h->generation, 1);
        if (xid == MED_XID_LOST)
            vgpu_error("GPU %u is lost to the driver: its vGPUs are reported unhealthy", h->index[i]);
        else
            vgpu_error("GPU %u had XID %u: its vGPUs are reported unhealthy until the GPU is reset and the mediator "
                       "restarted", h->index[i], xid);
    }
}

/* Which GPUs the driver lost: those a query of their memory says so of. */
static void find_lost(struct med_health *h, const struct vgpu_real_nvml *nvml)
{
    for (int i = 0; i < h->n; i++) {
        nvmlMemory_t mem;
        if (nvml->memory(h->dev[i], &mem) == NVML_ERROR_GPU_IS_LOST)
            mark(h, i, MED_XID_LOST);
    }
}

static bool all_marked(struct med_health *h)
{
    for (int i = 0; i < h->n; i++)
        if (!atomic_load(&h->xid[i]))
            return false;
    return true;
}

static void *wait_events(void *arg)
{
    struct med_health *h = arg;
    const struct vgpu_real_nvml *nvml = vgpu_real_nvml(NULL);
    bool said = false;
    while (!all_marked(h)) {
        nvmlEventData_t data = { 0 };
        nvmlReturn_t r = nvml->event_set_wait(h->set, &data, 5000);
        if (r == NVML_ERROR_TIMEOUT)
            continue;
        if (r == NVML_ERROR_GPU_IS_LOST) {
            find_lost(h, nvml);
            sleep(1); /* the set may keep saying so at once */
            continue;
        }
        if (r != NVML_SUCCESS) {
            if (!said)
                vgpu_warn("waiting for the GPUs' XID events failed (NVML error %d); tried again every 5 s", (int)r);
            said = true;
            sleep(5);
            continue;
        }
        if (!(data.eventType & nvmlEventTypeXidCriticalError) || application_xid(data.eventData))
            continue;
        for (int i = 0; i < h->n; i++)
            if (data.device == h->dev[i])
                mark(h, i, data.eventData ? (uint32_t)data.eventData : 1);
    }
    return NULL;
}

struct med_health *med_health_start(const struct med_gpus *g)
{
    struct med_health *h = calloc(1, sizeof(*h));
    const struct vgpu_real_nvml *nvml = vgpu_real_nvml(NULL);
    if (!h)
        return NULL;
    if (!nvml || !nvml->event_set_create || !nvml->register_events || !nvml->event_set_wait ||
        nvml->event_set_create(&h->set) != NVML_SUCCESS) {
        vgpu_warn("the driver gives no XID events: the GPUs are reported healthy whatever befalls them");
        return h;
    }
    for (int i = 0; i < g->n; i++) {
        nvmlDevice_t dev;
        if (nvml->by_index(g->gpu[i].index, &dev) != NVML_SUCCESS)
            continue;
        nvmlReturn_t r = nvml->register_events(dev, nvmlEventTypeXidCriticalError, h->set);
        if (r != NVML_SUCCESS) {
            vgpu_warn("GPU %u gives no XID events (NVML error %d): it is reported healthy whatever befalls it",
                      g->gpu[i].index, (int)r);
            continue;
        }
        h->index[h->n] = g->gpu[i].index;
        h->dev[h->n++] = dev;
    }
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (h->n && pthread_create(&t, &attr, wait_events, h) != 0)
        vgpu_warn("no thread to wait for XID events: the GPUs are reported healthy whatever befalls them");
    pthread_attr_destroy(&attr);
    return h;
}

uint32_t med_health_xid(const struct med_health *h, unsigned index)
{
    for (int i = 0; h && i < h->n; i++)
        if (h->index[i] == index)
            return atomic_load(&((struct med_health *)h)->xid[i]);
    return 0;
}

uint64_t med_health_generation(const struct med_health *h)
{
    return h ? atomic_load(&((struct med_health *)h)->generation) : 0;
}
