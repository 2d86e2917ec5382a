/* CUDA devices <-> vGPU devices; see cuda_devices.h. */
#define _GNU_SOURCE
#include "vgpu_backend/join/cuda_devices.h"

#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_cuda_slots.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_CUDA_DEVICES 64

/* CUdevice value -> vGPU index; written once by map_once(), then read-only. */
static int vgpu_index[MAX_CUDA_DEVICES];
static int mapped_count;
static pthread_once_t map_guard = PTHREAD_ONCE_INIT;
static const struct vgpu_self *map_self;

/* The vGPU device a CUDA_VISIBLE_DEVICES entry means, or -1. */
static int entry_device(const struct vgpu_self *self, const char *e)
{
    if (*e && strspn(e, "0123456789") == strlen(e)) {
        int k = atoi(e);
        return k < self->ndev ? k : -1;
    }
    if (strncasecmp(e, "GPU-", 4) != 0)
        return -1;
    int match = -1;
    for (int i = 0; i < self->ndev; i++)
        if (strncasecmp(self->dev[i].uuid, e, strlen(e)) == 0) {
            if (match >= 0)
                return -1; /* an ambiguous prefix, as the driver treats it */
            match = i;
        }
    return match;
}

void vgpu_cuda_devices_restrict(const struct vgpu_self *self)
{
    const char *user = getenv("CUDA_VISIBLE_DEVICES");
    if (self->bar0.bar->config.all_devices && !user)
        return; /* every GPU is the vGPU's: nothing to hide */
    char value[VGPU_MAX_DEVICES * (NVML_DEVICE_UUID_V2_BUFFER_SIZE + 1)] = "";
    if (!user) {
        for (int i = 0; i < self->ndev; i++) {
            strcat(value, i ? "," : "");
            strcat(value, self->dev[i].uuid);
        }
    } else {
        /* Like the driver: entries up to the first that names no device. */
        char buf[1024];
        snprintf(buf, sizeof(buf), "%s", user);
        int n = 0;
        bool taken[VGPU_MAX_DEVICES] = { false };
        for (char *save = NULL, *e = strtok_r(buf, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
            while (isspace((unsigned char)*e))
                e++;
            int k = entry_device(self, e);
            if (k < 0 || taken[k]) {
                vgpu_warn("CUDA_VISIBLE_DEVICES=%s: \"%s\" is not a device of this vGPU (it has %d); CUDA sees "
                          "the devices before it",
                          user, e, self->ndev);
                break;
            }
            taken[k] = true;
            strcat(value, n++ ? "," : "");
            strcat(value, self->dev[k].uuid);
        }
    }
    vgpu_info("CUDA_VISIBLE_DEVICES=%s (was %s)", value, user ? user : "unset");
    setenv("CUDA_VISIBLE_DEVICES", value, 1);
}

static void format_uuid(const CUuuid *u, char *out, size_t len)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void map_once(void)
{
    int count = 0;
    for (int i = 0; i < MAX_CUDA_DEVICES; i++)
        vgpu_index[i] = -1;
    if (VGPU_REAL_CUDA(cuDeviceGetCount)(&count) != CUDA_SUCCESS)
        return;
    for (int i = 0; i < count && i < MAX_CUDA_DEVICES; i++) {
        CUdevice dev;
        CUuuid uuid;
        char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        if (VGPU_REAL_CUDA(cuDeviceGet)(&dev, i) != CUDA_SUCCESS || dev < 0 || dev >= MAX_CUDA_DEVICES ||
            VGPU_REAL_CUDA(cuDeviceGetUuid_v2)(&uuid, dev) != CUDA_SUCCESS)
            continue;
        format_uuid(&uuid, text, sizeof(text));
        for (int k = 0; k < map_self->ndev; k++)
            if (strcasecmp(map_self->dev[k].uuid, text) == 0)
                vgpu_index[dev] = k;
        if (vgpu_index[dev] < 0)
            vgpu_warn("CUDA device %d (%s) is not a device of this vGPU; its memory is not counted", i, text);
    }
    __atomic_store_n(&mapped_count, count, __ATOMIC_RELEASE);
}

void vgpu_cuda_devices_map(const struct vgpu_self *self)
{
    map_self = self;
    pthread_once(&map_guard, map_once);
}

/* The map is written once (map_once) and read from any thread, one that
 * never ran the once among them (an executor's lane): mapped_count's
 * release and this acquire order the writes before the reads. */
int vgpu_cuda_vgpu_index(CUdevice dev)
{
    if (dev < 0 || dev >= MAX_CUDA_DEVICES || !__atomic_load_n(&mapped_count, __ATOMIC_ACQUIRE))
        return -1;
    return vgpu_index[dev];
}
