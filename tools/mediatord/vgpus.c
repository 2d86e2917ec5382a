/* The mediator's vGPUs at run time; see vgpus.h. */
#define _GNU_SOURCE
#include "tools/mediatord/vgpus.h"

#include "common/error.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATUS_BYTES (sizeof(struct vgpu_bar0) - VGPU_BAR0_CONFIG_PAGE)

/* The BAR0 config registers a vGPU's conf means. */
static void registers(const struct med_vgpu_conf *conf, const struct med_gpus *g, struct vgpu_bar0_config *out)
{
    memset(out, 0, sizeof(*out));
    out->device_count = (uint32_t)conf->ndev;
    for (int d = 0; d < conf->ndev; d++) {
        /* UUIDs, never indexes: a VM or a container numbers GPUs its own way.
         * (A kept device this machine no longer has stays as written.) */
        const struct med_gpu *gpu = med_gpus_find(g, conf->devices[d]);
        snprintf(out->device[d].physical, sizeof(out->device[d].physical), "%.47s",
                 gpu ? gpu->uuid : conf->devices[d]);
        out->device[d].memory_limit = conf->memory;
        out->device[d].compute_share = conf->compute;
    }
}

static bool same_devices(const struct vgpu_bar0_config *a, const struct vgpu_bar0_config *b)
{
    if (a->device_count != b->device_count)
        return false;
    for (uint32_t d = 0; d < a->device_count; d++)
        if (strcmp(a->device[d].physical, b->device[d].physical) != 0)
            return false;
    return true;
}

static int open_file(const char *path, bool *created, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    *created = false;
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        *created = fd >= 0;
    }
    if (fd < 0)
        return vgpu_fail(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return fd;
}

/* A host window: NAME.config and NAME.status, mapped as one. */
static int map_host(struct med_vgpu *v, bool *created, char *err, size_t errlen)
{
    char path[4200];
    bool c1, c2;
    snprintf(path, sizeof(path), "%s.config", v->base);
    int cfd = open_file(path, &c1, err, errlen);
    if (cfd < 0)
        return -1;
    snprintf(path, sizeof(path), "%s.status", v->base);
    int sfd = open_file(path, &c2, err, errlen);
    if (sfd < 0) {
        close(cfd);
        return -1;
    }
    *created = c1 || c2;
    if (*created && (ftruncate(cfd, 0) != 0 || ftruncate(cfd, VGPU_BAR0_CONFIG_PAGE) != 0 ||
                     ftruncate(sfd, 0) != 0 || ftruncate(sfd, STATUS_BYTES) != 0)) {
        vgpu_fail(err, errlen, "cannot size %s's window: %s", v->conf.name, strerror(errno));
        goto bad;
    }
    char why[512];
    if (*created) {
        /* The split mapper validates; a new window is laid out first. */
        struct vgpu_bar0_config none = { 0 };
        char *base = mmap(NULL, sizeof(struct vgpu_bar0), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED ||
            mmap(base, VGPU_BAR0_CONFIG_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, cfd, 0) == MAP_FAILED ||
            mmap(base + VGPU_BAR0_CONFIG_PAGE, STATUS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, sfd, 0) ==
                MAP_FAILED) {
            vgpu_fail(err, errlen, "cannot map %s's window: %s", v->conf.name, strerror(errno));
            goto bad;
        }
        v->bar = (struct vgpu_bar0 *)base;
        vgpu_bar0_init(v->bar, &none, VGPU_BAR0_MEDIATED, v->conf.name);
    } else if (!(v->bar = vgpu_bar0_map_split(cfd, sfd, true, why, sizeof(why)))) {
        vgpu_fail(err, errlen, "vGPU %s: %s.config/.status: %s; remove them (no process of the vGPU may be running)",
             v->conf.name, v->base, why);
        goto bad;
    }
    /* What clients get: the first page read-only, so they cannot move their limits. */
    snprintf(path, sizeof(path), "%s.config", v->base);
    v->config_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    v->status_fd = sfd;
    close(cfd);
    if (v->config_fd < 0) {
        vgpu_fail(err, errlen, "cannot open %s: %s", path, strerror(errno));
        munmap(v->bar, sizeof(*v->bar));
        close(sfd);
        return -1;
    }
    return 0;
bad:
    close(cfd);
    close(sfd);
    return -1;
}

/* A guest window: NAME.bar0, one file the size of an ivshmem BAR. */
static int map_guest(struct med_vgpu *v, bool *created, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s.bar0", v->base);
    int fd = open_file(path, created, err, errlen);
    if (fd < 0)
        return -1;
    struct stat st;
    if ((*created && ftruncate(fd, VGPU_BAR0_GUEST_FILE_SIZE) != 0) || fstat(fd, &st) != 0) {
        close(fd);
        return vgpu_fail(err, errlen, "cannot size %s: %s", path, strerror(errno));
    }
    void *b = mmap(NULL, sizeof(struct vgpu_bar0), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (b == MAP_FAILED)
        return vgpu_fail(err, errlen, "cannot map %s: %s", path, strerror(errno));
    v->bar = b;
    v->config_fd = v->status_fd = -1;
    struct vgpu_bar0_config none = { 0 };
    char why[512];
    if (*created) {
        vgpu_bar0_init(v->bar, &none, VGPU_BAR0_GUEST, v->conf.name);
    } else if (vgpu_bar0_validate(v->bar, (uint64_t)st.st_size, why, sizeof(why)) != 0 ||
               v->bar->header.flags != VGPU_BAR0_GUEST) {
        munmap(b, sizeof(struct vgpu_bar0));
        return vgpu_fail(err, errlen, "vGPU %s: %s: %s; remove it (the VM must not be running)", v->conf.name, path,
                    v->bar->header.flags != VGPU_BAR0_GUEST ? "not a guest window" : why);
    }
    return 0;
}

static void close_vgpu(struct med_vgpu *v)
{
    if (v->bar)
        munmap(v->bar, sizeof(*v->bar));
    if (v->config_fd >= 0)
        close(v->config_fd);
    if (v->status_fd >= 0)
        close(v->status_fd);
    free(v);
}

static void set_devices(struct med_vgpu *v, const struct med_gpus *g)
{
    for (int d = 0; d < v->conf.ndev; d++)
        v->gpu[d] = med_gpus_find(g, v->conf.devices[d]);
}

/*
 * Takes conf: its quota and compute share at once, its devices only when
 * nothing uses the vGPU (or may_move).  Writes the registers.
 */
static void apply(struct med_vgpu *v, const struct med_vgpu_conf *conf, const struct med_gpus *g, bool may_move)
{
    struct vgpu_bar0_config want;
    registers(conf, g, &want);
    unsigned busy = atomic_load(&v->bar->status.processes) + (unsigned)v->clients;
    struct med_vgpu_conf next = *conf;
    if (!may_move && busy && !same_devices(&v->bar->config, &want)) {
        /* The devices it has are the window's (by UUID), whatever config
         * this mediator or the one before it started from. */
        vgpu_error("vGPU %s: its devices cannot change while %u process(es) use it; it keeps its %u device(s) "
                   "until they have exited and the config is reloaded", conf->name, busy,
                   v->bar->config.device_count);
        next.ndev = (int)v->bar->config.device_count;
        for (int d = 0; d < next.ndev; d++)
            memcpy(next.devices[d], v->bar->config.device[d].physical, sizeof(next.devices[d]));
        registers(&next, g, &want);
    }
    v->conf = next;
    set_devices(v, g);
    for (uint32_t d = 0; d < want.device_count; d++) {
        uint64_t used = atomic_load(&v->bar->status.device[d].memory_used), limit = next.memory;
        if (limit && used > limit) {
            char a[32], b[32];
            vgpu_warn("vGPU %s device %u: quota %s is below the %s its processes hold: new allocations are refused "
                      "until they hold less; no process is stopped", next.name, d,
                      vgpu_format_size(limit, a, sizeof(a)), vgpu_format_size(used, b, sizeof(b)));
        }
    }
    vgpu_bar0_write_config(v->bar, &want);
}

static struct med_vgpu *open_vgpu(const struct med_config *c, const struct med_vgpu_conf *conf,
                                  const struct med_gpus *g, char *err, size_t errlen)
{
    struct med_vgpu *v = calloc(1, sizeof(*v));
    if (!v) {
        vgpu_fail(err, errlen, "out of memory");
        return NULL;
    }
    v->conf = *conf;
    v->config_fd = v->status_fd = -1;
    snprintf(v->base, sizeof(v->base), "%.4000s/%s", c->state_dir, conf->name);
    bool created;
    if ((conf->guest ? map_guest(v, &created, err, errlen) : map_host(v, &created, err, errlen)) != 0) {
        free(v);
        return NULL;
    }
    apply(v, conf, g, created);
    if (!created) {
        char size[32];
        uint64_t used = 0;
        for (uint32_t d = 0; d < v->bar->config.device_count; d++)
            used += atomic_load(&v->bar->status.device[d].memory_used);
        vgpu_info("vGPU %s: found again with %u process(es) holding %s", conf->name,
                  atomic_load(&v->bar->status.processes), vgpu_format_size(used, size, sizeof(size)));
    }
    return v;
}

int med_vgpus_open(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g, char *err,
                   size_t errlen)
{
    memset(all, 0, sizeof(*all));
    if (mkdir(c->state_dir, 0755) != 0 && errno != EEXIST)
        return vgpu_fail(err, errlen, "cannot create state_dir %s: %s", c->state_dir, strerror(errno));
    for (int i = 0; i < c->nvgpus; i++) {
        struct med_vgpu *v = open_vgpu(c, &c->vgpu[i], g, err, errlen);
        if (!v)
            return -1;
        all->v[all->n++] = v;
        uint32_t e = atomic_load(&v->bar->status.mediator_epoch);
        all->epoch = e > all->epoch ? e : all->epoch;
    }
    all->epoch++;
    return 0;
}

void med_vgpus_announce(struct med_vgpus *all)
{
    for (int i = 0; i < all->n; i++)
        if (!all->v[i]->conf.guest)
            atomic_store(&all->v[i]->bar->status.mediator_epoch, all->epoch);
}

struct med_vgpu *med_vgpus_find(struct med_vgpus *all, const char *name)
{
    for (int i = 0; i < all->n; i++)
        if (strcmp(all->v[i]->conf.name, name) == 0)
            return all->v[i];
    return NULL;
}

void med_vgpus_reload(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g)
{
    for (int i = 0; i < all->n; i++)
        if (!all->v[i]->retired && !med_config_find(c, all->v[i]->conf.name)) {
            all->v[i]->retired = true;
            vgpu_info("vGPU %s: gone from the config; it admits nobody and goes when its processes have exited",
                      all->v[i]->conf.name);
        }
    for (int i = 0; i < c->nvgpus; i++) {
        const struct med_vgpu_conf *conf = &c->vgpu[i];
        struct med_vgpu *v = med_vgpus_find(all, conf->name);
        if (v && v->conf.guest != conf->guest) {
            vgpu_error("vGPU %s: guest = cannot change while it exists; remove it, reload, then add it back",
                       conf->name);
            continue;
        }
        if (v) {
            v->retired = false;
            apply(v, conf, g, false);
            continue;
        }
        if (all->n == (int)(sizeof(all->v) / sizeof(*all->v))) {
            vgpu_error("vGPU %s: too many vGPUs (retired ones included) to add it now", conf->name);
            continue;
        }
        char err[1024];
        if (!(v = open_vgpu(c, conf, g, err, sizeof(err)))) {
            vgpu_error("vGPU %s: %s", conf->name, err);
            continue;
        }
        if (!conf->guest)
            atomic_store(&v->bar->status.mediator_epoch, all->epoch);
        all->v[all->n++] = v;
        vgpu_info("vGPU %s: added", conf->name);
    }
}

void med_vgpu_release(struct med_vgpu *v, int slot, uint64_t owner, const char *who)
{
    uint64_t returned = 0;
    v->bound[slot] = false;
    if (!vgpu_bar0_release_slot(v->bar, slot, owner, &returned))
        return; /* it left on its own */
    char size[32];
    vgpu_info("vGPU %s: %s ended; %s returned", v->conf.name, who, vgpu_format_size(returned, size, sizeof(size)));
}

static void unlink_files(const struct med_vgpu *v)
{
    static const char *const suffixes[] = { ".config", ".status", ".bar0" };
    char path[4200];
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(*suffixes); i++) {
        snprintf(path, sizeof(path), "%s%s", v->base, suffixes[i]);
        unlink(path);
    }
}

void med_vgpus_scan(struct med_vgpus *all)
{
    for (int i = 0; i < all->n; i++) {
        struct med_vgpu *v = all->v[i];
        for (int s = 0; !v->conf.guest && s < VGPU_BAR0_MAX_PROCS; s++) {
            uint64_t o = atomic_load(&v->bar->procs[s].owner);
            if (v->bound[s] || VGPU_BAR0_OWNER_STATE(o) != VGPU_PROC_LIVE ||
                vgpu_bar0_owner_alive(VGPU_BAR0_OWNER_PID(o), v->bar->procs[s].start_time))
                continue;
            char who[64];
            snprintf(who, sizeof(who), "process %d (not reattached)", VGPU_BAR0_OWNER_PID(o));
            med_vgpu_release(v, s, o, who);
        }
        if (v->retired && v->clients == 0 && atomic_load(&v->bar->status.processes) == 0) {
            vgpu_info("vGPU %s: removed", v->conf.name);
            unlink_files(v);
            close_vgpu(v);
            all->v[i--] = all->v[--all->n];
        }
    }
}
