/* Joining the process's vGPU; see self.h. */
#define _GNU_SOURCE
#include "vgpu_backend/self.h"

#include "common/log.h"
#include "vgpu_backend/real_nvml.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The process's vGPU, per library copy: written once under join_lock (and
 * by the fork handler in a child), read lock-free once published. */
static struct vgpu_self self;
static struct vgpu_self *self_on;
static bool joined, entered, forked;
static pthread_mutex_t join_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Joining calls the driver's NVML, whose nvmlInit_v2 calls its exported
 * nvmlInitWithFlags, which LD_PRELOAD binds to vgpu's hook, which joins:
 * on the joining thread such re-entrant calls see no vGPU and forward.
 */
static __thread bool joining;
static const struct vgpu_self passthrough = { .mode = VGPU_MODE_OFF };

static void refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void refuse(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(self.why, sizeof(self.why), fmt, ap);
    va_end(ap);
    self.mode = VGPU_MODE_REFUSED;
}

/* A device as the settings name it: NVML index or UUID.  0 or -1. */
static int resolve(const struct vgpu_real_nvml *nvml, const char *token, struct vgpu_device *d)
{
    nvmlReturn_t r = strncmp(token, "GPU-", 4) == 0 ? nvml->by_uuid(token, &d->nvml)
                                                     : nvml->by_index((unsigned)atoi(token), &d->nvml);
    nvmlMemory_t mem;
    if (r != NVML_SUCCESS || nvml->uuid(d->nvml, d->uuid, sizeof(d->uuid)) != NVML_SUCCESS ||
        nvml->memory(d->nvml, &mem) != NVML_SUCCESS)
        return -1;
    d->physical_total = mem.total;
    return 0;
}

/* The config this process asks for, from its settings and the GPUs. */
static int want_config(const struct vgpu_real_nvml *nvml, struct vgpu_bar0_config *c)
{
    const struct vgpu_settings *s = &self.settings;
    memset(c, 0, sizeof(*c));
    unsigned physical = 0;
    if (nvml->count(&physical) != NVML_SUCCESS)
        physical = 0;
    if (s->listed) {
        c->device_count = (uint32_t)s->ndevices;
        for (int i = 0; i < s->ndevices; i++)
            snprintf(c->device[i].physical, sizeof(c->device[i].physical), "%s", s->devices[i]);
    } else {
        c->all_devices = 1;
        c->device_count = physical > VGPU_MAX_DEVICES ? VGPU_MAX_DEVICES : physical;
        for (unsigned i = 0; i < c->device_count; i++)
            snprintf(c->device[i].physical, sizeof(c->device[i].physical), "%u", i);
    }
    for (uint32_t i = 0; i < VGPU_MAX_DEVICES; i++) {
        if (s->limit_set[i] && i >= c->device_count) {
            refuse("VGPU_MEMORY_LIMIT sets device %u, but the vGPU has %u device(s)", i, c->device_count);
            return -1;
        }
        if (i < c->device_count) {
            c->device[i].memory_limit = vgpu_settings_limit(s, (int)i);
            c->device[i].compute_share = 100;
        }
    }
    return 0;
}

/* The device table from the BAR0 config (the vGPU's truth once joined). */
static int load_devices(const struct vgpu_real_nvml *nvml)
{
    const struct vgpu_bar0_config *c = &self.bar0.bar->config;
    unsigned physical = 0;
    nvml->count(&physical);
    self.ndev = (int)c->device_count;
    for (int i = 0; i < self.ndev; i++) {
        struct vgpu_device *d = &self.dev[i];
        if (resolve(nvml, c->device[i].physical, d) != 0) {
            refuse("%s: vGPU device %d is GPU %s, which this machine does not have (it has %u GPU(s), "
                   "0-%u, as nvidia-smi numbers them)",
                   self.settings.listed ? "VGPU_VISIBLE_DEVICES" : "VGPU_BAR0", i, c->device[i].physical,
                   physical, physical ? physical - 1 : 0);
            return -1;
        }
        d->limit = c->device[i].memory_limit;
        if (d->limit > d->physical_total) {
            char a[32], b[32];
            vgpu_warn("vGPU device %d's limit %s is more than GPU %s has (%s); the GPU's memory bounds it", i,
                      vgpu_format_size(d->limit, a, sizeof(a)), c->device[i].physical,
                      vgpu_format_size(d->physical_total, b, sizeof(b)));
        }
        for (int j = 0; j < i; j++)
            if (strcmp(self.dev[j].uuid, d->uuid) == 0) {
                refuse("vGPU devices %d and %d are the same GPU (%s)", j, i, d->uuid);
                return -1;
            }
    }
    return 0;
}

static void join_locked(void)
{
    char err[1536];
    if (vgpu_settings_from_env(&self.settings, err, sizeof(err)) != 0) {
        refuse("%s", err);
        return;
    }
    if (!self.settings.active) {
        self.mode = VGPU_MODE_OFF;
        return;
    }
    const char *why = NULL;
    const struct vgpu_real_nvml *nvml = vgpu_real_nvml(&why);
    if (!nvml) {
        refuse("a vGPU is configured, but %s", why);
        return;
    }
    struct vgpu_bar0_config want;
    if (want_config(nvml, &want) != 0)
        return;
    const struct vgpu_settings *s = &self.settings;
    bool join = s->bar0_explicit && !s->listed && !s->limit_all;
    for (int i = 0; i < VGPU_MAX_DEVICES; i++)
        join = join && !s->limit_set[i];
    if (vgpu_bar0_attach(s->bar0, &want, join, &self.bar0, err, sizeof(err)) != 0) {
        refuse("%s", err);
        return;
    }
    if (load_devices(nvml) != 0) {
        vgpu_bar0_close(&self.bar0);
        return;
    }
    self.mode = VGPU_MODE_ON;
    for (int i = 0; i < self.ndev; i++) {
        char size[32];
        vgpu_info("joined vGPU %s: device %d = %s (GPU %s), memory limit %s", self.bar0.path, i, self.dev[i].uuid,
                  self.bar0.bar->config.device[i].physical,
                  self.dev[i].limit ? vgpu_format_size(self.dev[i].limit, size, sizeof(size)) : "none");
    }
}

static void after_fork_child(void)
{
    /* The child inherits the mapping but not the parent's slot. */
    pthread_mutex_init(&join_lock, NULL);
    if (self.bar0.slot >= 0)
        forked = true;
}

static void leave_at_exit(void)
{
    if (self.mode == VGPU_MODE_ON)
        vgpu_bar0_detach(&self.bar0);
}

/* Takes this process's slot in the process table: its allocations count
 * from now on.  A process that cannot be counted is refused. */
static void enter_locked(void)
{
    char err[1024];
    entered = true;
    if (vgpu_bar0_enter(&self.bar0, err, sizeof(err)) == 0) {
        atexit(leave_at_exit);
        return;
    }
    snprintf(self.why, sizeof(self.why), "%s", err);
    self.mode = VGPU_MODE_REFUSED;
    __atomic_store_n(&self_on, NULL, __ATOMIC_RELEASE);
    vgpu_error("%s; this process is shown no GPU", self.why);
}

const struct vgpu_self *vgpu_self_join(bool take_slot)
{
    if (__atomic_load_n(take_slot ? &entered : &joined, __ATOMIC_ACQUIRE))
        return &self;
    if (joining)
        return &passthrough;
    pthread_mutex_lock(&join_lock);
    if (!joined) {
        joining = true;
        join_locked();
        joining = false;
        if (self.mode == VGPU_MODE_REFUSED)
            vgpu_error("%s; this process is shown no GPU", self.why);
        if (self.mode == VGPU_MODE_ON) {
            pthread_atfork(NULL, NULL, after_fork_child);
            __atomic_store_n(&self_on, &self, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&joined, true, __ATOMIC_RELEASE);
    }
    if (take_slot && !entered) {
        if (self.mode == VGPU_MODE_ON)
            enter_locked();
        __atomic_store_n(&entered, true, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&join_lock);
    return &self;
}

struct vgpu_self *vgpu_self_on(void)
{
    return __atomic_load_n(&self_on, __ATOMIC_ACQUIRE);
}

void vgpu_self_check_fork(struct vgpu_self *s)
{
    if (__builtin_expect(!forked, 1))
        return;
    pthread_mutex_lock(&join_lock);
    if (forked) {
        const struct vgpu_bar0_config want = s->bar0.bar->config;
        struct vgpu_bar0_map fresh;
        char err[1024];
        int rc = vgpu_bar0_attach(s->bar0.path, &want, true, &fresh, err, sizeof(err));
        if (rc == 0 && (rc = vgpu_bar0_enter(&fresh, err, sizeof(err))) != 0)
            vgpu_bar0_close(&fresh);
        if (rc == 0) {
            /* The inherited mapping stays mapped (pointers into it may live
             * on); its descriptor, whose flock the parent shares, goes. */
            close(s->bar0.fd);
            s->bar0 = fresh;
        } else {
            vgpu_error("after fork: %s; this process's allocations are not counted", err);
            s->bar0.slot = -1;
        }
        forked = false;
    }
    pthread_mutex_unlock(&join_lock);
}

int vgpu_self_index_of_nvml(const struct vgpu_self *s, nvmlDevice_t dev)
{
    for (int i = 0; i < s->ndev; i++)
        if (s->dev[i].nvml == dev)
            return i;
    return -1;
}

uint64_t vgpu_self_total(const struct vgpu_self *s, int i)
{
    const struct vgpu_device *d = &s->dev[i];
    return d->limit && d->limit < d->physical_total ? d->limit : d->physical_total;
}

uint64_t vgpu_self_used(const struct vgpu_self *s, int i)
{
    return __atomic_load_n(&s->bar0.bar->status.device[i].memory_used, __ATOMIC_RELAXED);
}
