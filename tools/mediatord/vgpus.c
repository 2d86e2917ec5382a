/* The mediator's vGPUs at run time; see vgpus.h. */
#define _GNU_SOURCE
#include "tools/mediatord/vgpus.h"

#include "common/error.h"
#include "common/log.h"

#include <dirent.h>
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

/* Opens path, or makes it where create (and it is missing). */
static int open_file(const char *path, bool create, bool *created, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    *created = false;
    if (fd < 0 && errno == ENOENT && create) {
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        *created = fd >= 0;
    }
    if (fd < 0)
        return vgpu_fail(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return fd;
}

/* A host window: NAME.config and NAME.status, mapped as one. */
static int map_host(struct med_vgpu *v, bool create, bool *created, char *err, size_t errlen)
{
    char path[4200];
    bool c1, c2;
    snprintf(path, sizeof(path), "%s.config", v->base);
    int cfd = open_file(path, create, &c1, err, errlen);
    if (cfd < 0)
        return -1;
    snprintf(path, sizeof(path), "%s.status", v->base);
    int sfd = open_file(path, create, &c2, err, errlen);
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
        struct vgpu_bar0_config none = { 0 };
        if (!(v->bar = vgpu_bar0_map_parts(cfd, sfd, true, why, sizeof(why)))) {
            vgpu_fail(err, errlen, "vGPU %s: %s", v->conf.name, why);
            goto bad;
        }
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
static int map_guest(struct med_vgpu *v, bool create, bool *created, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s.bar0", v->base);
    int fd = open_file(path, create, created, err, errlen);
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

unsigned med_vgpu_processes(const struct med_vgpu *v)
{
    unsigned n = 0;
    for (int s = 0; s < VGPU_BAR0_MAX_PROCS; s++)
        n += VGPU_BAR0_OWNER_STATE(atomic_load(&v->bar->procs[s].owner)) == VGPU_PROC_LIVE;
    return n;
}

/* Processes using it: connections admitted to it, and processes holding
 * a slot with no connection (not reattached after a restart). */
static unsigned users(const struct med_vgpu *v)
{
    unsigned n = (unsigned)v->clients;
    for (int s = 0; s < VGPU_BAR0_MAX_PROCS; s++)
        n += !v->bound[s] && VGPU_BAR0_OWNER_STATE(atomic_load(&v->bar->procs[s].owner)) == VGPU_PROC_LIVE;
    return n;
}

/* Does a vGPU's window name other devices than conf would? */
static bool moves(const struct med_vgpu *v, const struct med_vgpu_conf *conf, const struct med_gpus *g)
{
    struct vgpu_bar0_config want;
    registers(conf, g, &want);
    return !same_devices(&v->bar->config, &want);
}

/* Takes conf: devices, quota, compute share, who is admitted.  Writes the
 * registers, and says when the quota is now below what is held. */
static void apply(struct med_vgpu *v, const struct med_vgpu_conf *conf, const struct med_gpus *g)
{
    struct vgpu_bar0_config want;
    registers(conf, g, &want);
    v->conf = *conf;
    for (int d = 0; d < conf->ndev; d++)
        v->gpu[d] = med_gpus_find(g, conf->devices[d]);
    for (uint32_t d = 0; d < want.device_count; d++) {
        uint64_t used = atomic_load(&v->bar->status.device[d].memory_used), limit = conf->memory;
        if (limit && used > limit) {
            char a[32], b[32];
            vgpu_warn("vGPU %s device %u: quota %s is below the %s its processes hold: new allocations are refused "
                      "until they hold less; no process is stopped", conf->name, d,
                      vgpu_format_size(limit, a, sizeof(a)), vgpu_format_size(used, b, sizeof(b)));
        }
    }
    vgpu_bar0_write_config(v->bar, &want);
}

static struct med_vgpu *map_vgpu(const struct med_config *c, const struct med_vgpu_conf *conf, bool create,
                                 bool *created, char *err, size_t errlen)
{
    struct med_vgpu *v = calloc(1, sizeof(*v));
    if (!v) {
        vgpu_fail(err, errlen, "out of memory");
        return NULL;
    }
    v->conf = *conf;
    v->config_fd = v->status_fd = -1;
    snprintf(v->base, sizeof(v->base), "%.4000s/%s", c->state_dir, conf->name);
    if ((conf->guest ? map_guest(v, create, created, err, errlen) : map_host(v, create, created, err, errlen)) != 0) {
        free(v);
        return NULL;
    }
    return v;
}

static void report_found(const struct med_vgpu *v)
{
    char size[32];
    uint64_t used = 0;
    for (uint32_t d = 0; d < v->bar->config.device_count; d++)
        used += atomic_load(&v->bar->status.device[d].memory_used);
    vgpu_info("vGPU %s: found again%s, %u process(es) holding %s", v->conf.name,
              v->retired ? " (not in the config)" : "", med_vgpu_processes(v),
              vgpu_format_size(used, size, sizeof(size)));
}

/* A vGPU of the config: its window made, or found again. */
static struct med_vgpu *open_vgpu(const struct med_config *c, const struct med_vgpu_conf *conf,
                                  const struct med_gpus *g, char *err, size_t errlen)
{
    bool created;
    struct med_vgpu *v = map_vgpu(c, conf, true, &created, err, errlen);
    if (!v)
        return NULL;
    unsigned n = created ? 0 : med_vgpu_processes(v);
    if (n && moves(v, conf, g)) {
        /* Its processes' devices come from the window: they cannot move. */
        vgpu_fail(err, errlen, "%s:%d: vGPU %s: its %u running process(es) use other GPUs than this config gives it "
                  "(%s first); a vGPU's devices change only while no process uses it: give it its devices back, or "
                  "let its processes exit", c->path, conf->devices_line, conf->name, n,
                  v->bar->config.device[0].physical);
        close_vgpu(v);
        return NULL;
    }
    apply(v, conf, g);
    if (!created)
        report_found(v);
    return v;
}

/* A window in state_dir of a vGPU the config no longer has: kept, admitting
 * nobody, until its processes have exited, as on a reload. */
static void adopt_orphan(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g,
                         const char *name, bool guest)
{
    struct med_vgpu_conf conf = { .guest = guest };
    snprintf(conf.name, sizeof(conf.name), "%s", name);
    bool created;
    char err[1024];
    struct med_vgpu *v = map_vgpu(c, &conf, false, &created, err, sizeof(err));
    if (!v) {
        vgpu_warn("a vGPU window in %s that the config does not name is left alone: %s", c->state_dir, err);
        return;
    }
    if (all->n == (int)(sizeof(all->v) / sizeof(*all->v))) {
        vgpu_warn("vGPU %s, not in the config, is left alone: too many vGPUs", name);
        close_vgpu(v);
        return;
    }
    /* What it is, from its registers. */
    conf.ndev = (int)v->bar->config.device_count;
    for (int d = 0; d < conf.ndev; d++)
        memcpy(conf.devices[d], v->bar->config.device[d].physical, sizeof(conf.devices[d]));
    conf.memory = conf.ndev ? vgpu_bar0_limit(v->bar, 0) : 0;
    conf.compute = conf.ndev ? v->bar->config.device[0].compute_share : 100;
    v->conf = conf;
    for (int d = 0; d < conf.ndev; d++)
        v->gpu[d] = med_gpus_find(g, conf.devices[d]);
    v->retired = true;
    all->v[all->n++] = v;
    report_found(v);
}

/* Every window in state_dir the config does not name: NAME.config (a host
 * vGPU's first part) or NAME.bar0 (a guest's). */
static void adopt_orphans(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g)
{
    DIR *d = opendir(c->state_dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        const char *dot = strrchr(e->d_name, '.');
        bool host = dot && strcmp(dot, ".config") == 0, guest = dot && strcmp(dot, ".bar0") == 0;
        char name[VGPU_NAME_LEN];
        if ((!host && !guest) || dot == e->d_name || dot - e->d_name >= (long)sizeof(name))
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)(dot - e->d_name), e->d_name);
        if (!med_vgpus_find(all, name))
            adopt_orphan(all, c, g, name, guest);
    }
    if (d)
        closedir(d);
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
    }
    adopt_orphans(all, c, g);
    for (int i = 0; i < all->n; i++) {
        uint32_t e = atomic_load(&all->v[i]->bar->status.mediator_epoch);
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

int med_vgpus_check_reload(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g, char *err,
                           size_t errlen)
{
    for (int i = 0; i < c->nvgpus; i++) {
        const struct med_vgpu_conf *conf = &c->vgpu[i];
        const struct med_vgpu *v = med_vgpus_find(all, conf->name);
        if (!v)
            continue;
        if (v->conf.guest != conf->guest)
            return vgpu_fail(err, errlen, "%s:%d: vGPU %s: guest = cannot change while the vGPU exists; remove it, "
                             "reload, then add it back", c->path, conf->guest_line ? conf->guest_line : conf->line,
                             conf->name);
        unsigned n = users(v);
        if (n && moves(v, conf, g))
            return vgpu_fail(err, errlen, "%s:%d: vGPU %s: its devices cannot change while %u process(es) use it",
                             c->path, conf->devices_line, conf->name, n);
    }
    if (all->n + c->nvgpus > (int)(sizeof(all->v) / sizeof(*all->v)))
        return vgpu_fail(err, errlen, "%s: too many vGPUs, counting the retired ones still in use", c->path);
    return 0;
}

int med_vgpus_reload(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g)
{
    int failed = 0;
    for (int i = 0; i < all->n; i++)
        if (!all->v[i]->retired && !med_config_find(c, all->v[i]->conf.name)) {
            all->v[i]->retired = true;
            vgpu_info("vGPU %s: gone from the config; it admits nobody and goes when its processes have exited",
                      all->v[i]->conf.name);
        }
    for (int i = 0; i < c->nvgpus; i++) {
        const struct med_vgpu_conf *conf = &c->vgpu[i];
        struct med_vgpu *v = med_vgpus_find(all, conf->name);
        if (v) {
            v->retired = false;
            apply(v, conf, g);
            continue;
        }
        char err[1024];
        if (!(v = open_vgpu(c, conf, g, err, sizeof(err)))) {
            vgpu_error("vGPU %s: %s", conf->name, err);
            failed++;
            continue;
        }
        if (!conf->guest)
            atomic_store(&v->bar->status.mediator_epoch, all->epoch);
        all->v[all->n++] = v;
        vgpu_info("vGPU %s: added", conf->name);
    }
    return failed;
}

void med_vgpu_release(struct med_vgpu *v, int slot, uint64_t owner, const char *who)
{
    uint64_t returned = 0;
    bool freed = vgpu_bar0_release_slot(v->bar, slot, owner, &returned);
    /* Unbound, unless the slot is already another process's (its owner word
     * is in memory the vGPU's processes can write). */
    uint64_t now = atomic_load(&v->bar->procs[slot].owner);
    if (freed || now == 0 || now == owner)
        v->bound[slot] = false;
    if (!freed)
        return;
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
        if (v->retired && users(v) == 0) {
            vgpu_info("vGPU %s: removed", v->conf.name);
            unlink_files(v);
            close_vgpu(v);
            all->v[i--] = all->v[--all->n];
        }
    }
}
