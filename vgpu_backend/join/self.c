/* Joining the process's vGPU; see self.h. */
#define _GNU_SOURCE
#include "vgpu_backend/join/self.h"

#include "common/log.h"
#include "common/operator.h"
#include "forwarder/real_nvml.h"
#include "forwarder/remote/guest/client.h"
#include "common/contract/window/user_dir.h"
#include "vgpu_backend/join/pci_window.h"
#include "vgpu_backend/join/status_publish.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The process's vGPU, owned by libvgpu-cuda's copy of this file (peer/peer.h):
 * written once under join_lock (and by the fork handler in a child), read
 * lock-free once published. */
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

/* A device as the config names it: NVML index or UUID.  0 or -1. */
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
        if ((s->limit_set[i] || s->share_set[i]) && i >= c->device_count) {
            refuse("%s sets device %u, but the vGPU has %u device(s)",
                   s->limit_set[i] ? "VGPU_MEMORY_LIMIT" : "VGPU_COMPUTE_SHARE", i, c->device_count);
            return -1;
        }
        if (i < c->device_count) {
            c->device[i].memory_limit = vgpu_settings_limit(s, (int)i);
            c->device[i].compute_share = vgpu_settings_share(s, (int)i);
            c->device[i].compute_mode = s->compute_mode;
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
                   self.source != VGPU_SOURCE_STANDALONE ? self.bar0.path
                   : self.settings.listed                ? "VGPU_VISIBLE_DEVICES"
                                                         : "VGPU_BAR0",
                   i, c->device[i].physical, physical, physical ? physical - 1 : 0);
            return -1;
        }
        uint64_t limit = vgpu_bar0_limit(self.bar0.bar, i);
        if (limit > d->physical_total) {
            char a[32], b[32];
            vgpu_warn("vGPU device %d's limit %s is more than GPU %s has (%s); the GPU's memory bounds it", i,
                      vgpu_format_size(limit, a, sizeof(a)), c->device[i].physical,
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

/* A default window (no VGPU_BAR0) goes in the user's own directory, which
 * is only known now (user_dir.h): its path moves there.  0, or -1 with err. */
static int place_default_window(struct vgpu_settings *s, char *err, size_t errlen)
{
    char dir[sizeof(s->bar0_dir)], path[sizeof(s->bar0)];
    if (!s->bar0_dir[0])
        return 0;
    if (vgpu_user_dir(dir, sizeof(dir), err, errlen) != 0)
        return -1;
    snprintf(path, sizeof(path), "%s%s", dir, s->bar0 + strlen(s->bar0_dir));
    snprintf(s->bar0, sizeof(s->bar0), "%s", path);
    snprintf(s->bar0_dir, sizeof(s->bar0_dir), "%s", dir);
    return 0;
}

/* Standalone: the vGPU the environment describes, in its BAR0 file. */
static int join_standalone(const struct vgpu_real_nvml *nvml)
{
    struct vgpu_settings *s = &self.settings;
    struct vgpu_bar0_config want;
    char err[1536];
    if (want_config(nvml, &want) != 0)
        return -1;
    bool join = s->bar0_explicit && !s->listed && !s->limit_all && !s->share_all;
    for (int i = 0; i < VGPU_MAX_DEVICES; i++)
        join = join && !s->limit_set[i] && !s->share_set[i];
    if (place_default_window(s, err, sizeof(err)) != 0 ||
        vgpu_bar0_attach(s->bar0, &want, join, &self.bar0, err, sizeof(err)) != 0) {
        refuse("%s", err);
        return -1;
    }
    return 0;
}

static bool env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

/* A process of a machine whose operator requires a source got none. */
static int required_source_missing(const char *what)
{
    refuse("the operator requires %s (%s), and %s", vgpu_operator()->require == VGPU_REQUIRE_MEDIATOR
                                                         ? "vgpu-mediatord"
                                                         : "a vGPU's window on this VM's PCI bus",
           VGPU_OPERATOR_CONFIG, what);
    return -1;
}

/* Where the vGPU comes from (self.h), unless the operator decided
 * (common/operator.h); 0, or -1 having refused. */
static int find_vgpu(const struct vgpu_real_nvml **nvml)
{
    char err[1536];
    const char *why = NULL;
    const struct vgpu_operator *op = vgpu_operator();
    if (op->refused) {
        refuse("%s", op->why);
        return -1;
    }
    if (vgpu_remote_wanted()) {
        /* A remote GPU (docs/design/remote.md): the executor is in the vGPU, and
         * holds this process to it; this process has no GPU of its own.
         * On a machine whose operator requires a source, only the
         * mediator may give it an executor. */
        if (!vgpu_remote_allowed()) {
            refuse("VGPU_REMOTE=%s: the operator requires this machine's processes to get their vGPU from %s "
                   "(%s); ask it for a remote GPU with VGPU_REMOTE=mediator", vgpu_remote_where(),
                   op->require == VGPU_REQUIRE_MEDIATOR ? "vgpu-mediatord" : "a VM's window", VGPU_OPERATOR_CONFIG);
            return -1;
        }
        return 0;
    }
    if (op->require == VGPU_REQUIRE_MEDIATOR)
        snprintf(self.link.required, sizeof(self.link.required), "%s", op->mediator_socket);
    int mediator = op->require == VGPU_REQUIRE_GUEST ? VGPU_MEDIATOR_NONE
                                                     : vgpu_mediator_join(&self.link, &self.bar0, err, sizeof(err));
    switch (mediator) {
    case VGPU_MEDIATOR_ADMITTED:
        self.source = VGPU_SOURCE_MEDIATOR;
        if (env_set("VGPU_MEMORY_LIMIT") || env_set("VGPU_VISIBLE_DEVICES") || env_set("VGPU_BAR0") ||
            env_set("VGPU_COMPUTE_SHARE") || env_set("VGPU_COMPUTE_MODE"))
            vgpu_info("VGPU_MEMORY_LIMIT, VGPU_VISIBLE_DEVICES, VGPU_BAR0, VGPU_COMPUTE_SHARE and VGPU_COMPUTE_MODE "
                      "are ignored: vgpu-mediatord at %s decides this process's vGPU", self.link.socket);
        break;
    case VGPU_MEDIATOR_REFUSED:
        refuse("%s", err);
        return -1;
    default:
        if (op->require == VGPU_REQUIRE_MEDIATOR)
            return required_source_missing("no mediator answers");
        switch (vgpu_pci_attach(&self.bar0, err, sizeof(err))) {
        case VGPU_PCI_FOUND:
            self.source = VGPU_SOURCE_GUEST;
            break;
        case VGPU_PCI_ERROR:
            refuse("%s", err);
            return -1;
        default:
            if (op->require == VGPU_REQUIRE_GUEST)
                return required_source_missing("there is none");
            if (vgpu_settings_from_env(&self.settings, err, sizeof(err)) != 0) {
                refuse("%s", err);
                return -1;
            }
            if (!self.settings.active)
                return 0; /* no vGPU: pass-through */
            self.source = VGPU_SOURCE_STANDALONE;
        }
    }
    *nvml = vgpu_real_nvml(&why);
    if (!*nvml) {
        refuse("a vGPU is configured, but %s", why);
        return -1;
    }
    return self.source == VGPU_SOURCE_STANDALONE ? join_standalone(*nvml) : 0;
}

static void join_locked(void)
{
    const struct vgpu_real_nvml *nvml = NULL;
    self.mode = VGPU_MODE_OFF;
    self.link.fd = -1;
    self.bar0.slot = -1;
    if (find_vgpu(&nvml) != 0 || !nvml)
        return;
    if (load_devices(nvml) != 0) {
        vgpu_bar0_close(&self.bar0);
        vgpu_mediator_forget(&self.link);
        return;
    }
    self.mode = VGPU_MODE_ON;
    for (int i = 0; i < self.ndev; i++) {
        char size[32];
        uint64_t limit = vgpu_bar0_limit(self.bar0.bar, i);
        const char *physical = self.bar0.bar->config.device[i].physical;
        char as_configured[64] = "";
        if (strcmp(physical, self.dev[i].uuid) != 0)
            snprintf(as_configured, sizeof(as_configured), " (GPU %s)", physical);
        vgpu_info("joined vGPU %s: device %d = %s%s, memory limit %s", self.bar0.path, i, self.dev[i].uuid,
                  as_configured, limit ? vgpu_format_size(limit, size, sizeof(size)) : "none");
    }
}

static void after_fork_child(void)
{
    /* The child inherits the mapping but not the parent's slot, nor its
     * connection (the mediator must see the parent's end when it ends), nor
     * its flock: it attaches anew before it counts anything (rejoin_child). */
    pthread_mutex_init(&join_lock, NULL);
    vgpu_mediator_forget(&self.link);
    self.bar0.slot = -1;
    forked = true;
}

static void leave_at_exit(void)
{
    /* A mediator frees its processes' slots itself, when their connections
     * close: a slot freed here could be given to another process before
     * this one's connection is seen to close. */
    if (self.mode == VGPU_MODE_ON && self.source != VGPU_SOURCE_MEDIATOR)
        vgpu_bar0_detach(&self.bar0);
}

/* Takes a process slot: this process's allocations count from now on. */
static int enter(struct vgpu_bar0_map *m, char *err, size_t errlen)
{
    if (self.source == VGPU_SOURCE_MEDIATOR)
        return vgpu_mediator_enter(&self.link, m, err, errlen);
    return vgpu_bar0_enter(m, err, errlen);
}

/* A process that cannot be counted is refused. */
static void enter_locked(void)
{
    char err[1024];
    if (enter(&self.bar0, err, sizeof(err)) == 0) {
        atexit(leave_at_exit);
        return;
    }
    snprintf(self.why, sizeof(self.why), "%s", err);
    self.mode = VGPU_MODE_REFUSED;
    __atomic_store_n(&self_on, NULL, __ATOMIC_RELEASE);
    vgpu_error("%s; this process is shown no GPU", self.why);
}

/* Closes fd if it is still the file (dev, ino): a child may have closed the
 * descriptor it inherited, and its number may now be another file's. */
static void close_if_same(int fd, uint64_t dev, uint64_t ino)
{
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
        close(fd);
}

/*
 * A fork child's own attachment (its own flock, its own connection), and
 * its own slot if take_slot.  A child that cannot be counted is refused:
 * counting into its parent's slot would be wrong, into none would never be
 * returned, and counting nothing would lift the vGPU's quota.
 */
static void rejoin_child(struct vgpu_self *s, bool take_slot)
{
    struct vgpu_bar0_map fresh;
    char err[1024] = "no vgpu-mediatord to join";
    char was[VGPU_NAME_LEN];
    bool mediated = s->source == VGPU_SOURCE_MEDIATOR;
    int rc;
    memcpy(was, s->link.vgpu, sizeof(was));
    if (mediated) {
        rc = vgpu_mediator_join(&s->link, &fresh, err, sizeof(err)) == VGPU_MEDIATOR_ADMITTED ? 0 : -1;
        if (rc == 0 && strcmp(was, s->link.vgpu) != 0) {
            /* Its devices are the parent's vGPU's. */
            snprintf(err, sizeof(err), "vgpu-mediatord put it in vGPU \"%s\", its parent is in \"%s\"",
                     s->link.vgpu, was);
            vgpu_bar0_close(&fresh);
            vgpu_mediator_forget(&s->link);
            rc = -1;
        }
    } else {
        /* The very window the parent counts in, never a new file that took its name. */
        rc = vgpu_bar0_reopen(&s->bar0, &fresh, err, sizeof(err));
    }
    if (rc == 0 && take_slot && (rc = enter(&fresh, err, sizeof(err))) != 0) {
        if (mediated)
            vgpu_bar0_close(&fresh);
        else
            close(fresh.fd); /* the mapping is the inherited one, still in use */
    }
    if (rc == 0) {
        /* The inherited mapping stays mapped (pointers into it may live on);
         * its descriptor, whose flock the parent shares, goes. */
        close_if_same(s->bar0.fd, s->bar0.file_dev, s->bar0.file_ino);
        s->bar0 = fresh;
    } else {
        snprintf(s->why, sizeof(s->why), "after fork: %s", err);
        __atomic_store_n(&s->mode, VGPU_MODE_REFUSED, __ATOMIC_RELEASE);
        vgpu_error("%s; this process is refused GPU memory", s->why);
    }
    forked = false;
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
        if (self.mode == VGPU_MODE_ON && forked)
            rejoin_child(&self, false);
        if (self.mode == VGPU_MODE_ON && vgpu_self_on())
            enter_locked();
        /* Only now: until the slot exists, other threads wait on the lock. */
        __atomic_store_n(&entered, true, __ATOMIC_RELEASE);
    }
    vgpu_status_page_publish(&self);
    pthread_mutex_unlock(&join_lock);
    return &self;
}

struct vgpu_self *vgpu_self_on(void)
{
    return __atomic_load_n(&self_on, __ATOMIC_ACQUIRE);
}

/* The mediator started again since this process attached to it. */
static bool restarted(const struct vgpu_self *s)
{
    return s->source == VGPU_SOURCE_MEDIATOR && s->bar0.slot >= 0 &&
           atomic_load_explicit(&s->bar0.bar->status.mediator_epoch, memory_order_relaxed) != s->link.epoch;
}

bool vgpu_self_check(struct vgpu_self *s)
{
    if (__builtin_expect(!forked && !restarted(s), 1))
        return __atomic_load_n(&s->mode, __ATOMIC_ACQUIRE) == VGPU_MODE_ON;
    pthread_mutex_lock(&join_lock);
    /* Again under the lock: another thread may have done it already. */
    if (forked) {
        rejoin_child(s, true);
    } else if (restarted(s)) {
        /* One try per mediator start: a mediator that will not take this
         * process back still returns its memory when it dies (by pid). */
        char err[1024];
        uint32_t epoch = atomic_load(&s->bar0.bar->status.mediator_epoch);
        if (vgpu_mediator_reattach(&s->link, &s->bar0, err, sizeof(err)) == 0)
            vgpu_info("reattached to vgpu-mediatord (vGPU \"%s\", slot %d)", s->link.vgpu, s->bar0.slot);
        else
            vgpu_warn("vgpu-mediatord restarted and this process could not reattach (%s); it goes on in its vGPU",
                      err);
        s->link.epoch = epoch;
    }
    pthread_mutex_unlock(&join_lock);
    return __atomic_load_n(&s->mode, __ATOMIC_ACQUIRE) == VGPU_MODE_ON;
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
    uint64_t limit = vgpu_bar0_limit(s->bar0.bar, i), physical = s->dev[i].physical_total;
    return limit && limit < physical ? limit : physical;
}

uint64_t vgpu_self_used(const struct vgpu_self *s, int i)
{
    return __atomic_load_n(&s->bar0.bar->status.device[i].memory_used, __ATOMIC_RELAXED);
}
