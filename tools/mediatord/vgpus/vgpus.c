/* The mediator's vGPUs at run time; see vgpus.h. */
#define _GNU_SOURCE
#include "tools/mediatord/vgpus/vgpus.h"

#include "common/error.h"
#include "common/log.h"
#include "tools/mediatord/config/state_dir.h"
#include "tools/mediatord/remote/vm_channels.h"
#include "tools/mediatord/vgpus/guest_window.h"
#include "common/contract/settings/settings.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
        out->device[d].compute_mode = conf->compute_mode;
    }
}

static bool same_devices(const struct vgpu_bar0_config *a, const struct vgpu_bar0_config *b)
{
    if (a->device_count != b->device_count)
        return false;
    for (uint32_t d = 0; d < a->device_count && d < VGPU_MAX_DEVICES; d++)
        if (strcmp(a->device[d].physical, b->device[d].physical) != 0)
            return false;
    return true;
}

/* Live slots in a window: for a VM's, the VM's own count of its processes. */
static unsigned live_slots(const struct vgpu_bar0 *b)
{
    unsigned n = 0;
    for (int s = 0; s < VGPU_BAR0_MAX_PROCS; s++)
        n += VGPU_BAR0_OWNER_STATE(atomic_load(&b->procs[s].owner)) == VGPU_PROC_LIVE;
    return n;
}

unsigned med_vgpu_processes(const struct med_vgpu *v)
{
    if (v->conf.guest)
        return live_slots(v->bar);
    unsigned n = 0;
    for (int i = 0; i < v->nadm; i++)
        n += v->adm[i]->slot >= 0;
    return n;
}

/* Processes using it: those admitted (a VM's: those its window shows). */
static unsigned users(const struct med_vgpu *v)
{
    return v->conf.guest ? live_slots(v->bar) : (unsigned)v->nadm;
}

/* Would conf give v other devices than it has? */
static bool moves(const struct med_vgpu *v, const struct med_vgpu_conf *conf, const struct med_gpus *g)
{
    struct vgpu_bar0_config want;
    registers(conf, g, &want);
    return !same_devices(&v->regs, &want);
}

/* Takes conf: devices, quota, compute share, who is admitted.  Writes the
 * registers, and says when the quota is now below what is held. */
static void apply(struct med_vgpu *v, const struct med_vgpu_conf *conf, const struct med_gpus *g)
{
    struct vgpu_bar0_config want;
    registers(conf, g, &want);
    unsigned in_vm = v->conf.guest && !same_devices(&v->regs, &want) ? live_slots(v->bar) : 0;
    if (in_vm)
        vgpu_warn("vGPU %s: its devices change while its VM shows %u process(es); they keep the GPUs they started "
                  "with until they start again", conf->name, in_vm);
    v->conf = *conf;
    v->regs = want;
    if (!conf->cls[0] && v->bound[0]) /* a plain vGPU now: no container's */
        med_vgpu_bind(v, "");
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
    vgpu_bar0_write_config(v->bar, &v->regs);
    v->dirty = true;
}

static struct med_vgpu *new_vgpu(struct med_vgpus *all, const struct med_vgpu_conf *conf)
{
    struct med_vgpu *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    v->all = all;
    v->conf = *conf;
    v->host.config_fd = v->host.status_fd = -1;
    v->guest.fd = v->guest.guard = -1;
    return v;
}

static void close_vgpu(struct med_vgpu *v)
{
    med_guest_window_close(&v->guest);
    med_host_window_close(&v->host);
    for (int i = 0; i < v->nadm; i++)
        free(v->adm[i]);
    free(v->adm);
    free(v);
}

static void remove_files(const struct med_vgpu *v)
{
    if (v->conf.guest)
        med_guest_window_remove(v->all->dir, v->conf.name);
    med_vm_channels_remove(v->all->dir, v->conf.name);
    med_journal_remove(v->all->dir, v->conf.name);
}

static void report_found(const struct med_vgpu *v)
{
    char size[32];
    uint64_t used = 0;
    for (uint32_t d = 0; d < v->regs.device_count; d++)
        used += atomic_load(&v->bar->status.device[d].memory_used);
    vgpu_info("vGPU %s: found again%s, %u process(es) holding %s", v->conf.name,
              v->retired ? " (not in the config)" : "", med_vgpu_processes(v),
              vgpu_format_size(used, size, sizeof(size)));
}

/* A VM's channels of v (vm_channels.h): served (a supervisor started,
 * which exits where one serves them already), or their file removed
 * where the config gives none. */
static void serve_vm(struct med_vgpus *all, const struct med_config *c, const struct med_vgpu *v)
{
    if (!v->conf.vm_channels) {
        med_vm_channels_remove(all->dir, v->conf.name);
        return;
    }
    char err[1024];
    if (med_vm_channels_serve(all->dir, all->dir_path, &v->conf, c->socket, err, sizeof(err)) != 0)
        vgpu_error("vGPU %s: its VM's channels are not served: %s", v->conf.name, err);
}

/* ---- a restart: journals, and what they let the mediator take back ---- */

/* name's journal: as med_journal_read, a broken one taken as none (said). */
static int read_journal(struct med_vgpus *all, const char *name, struct med_journal *j, char *err, size_t errlen)
{
    int r = med_journal_read(all->dir, all->dir_path, name, j, err, errlen);
    if (r == -2) {
        vgpu_warn("%s; vGPU %s starts afresh", err, name);
        return 0;
    }
    if (r == 1 && j->epoch > all->seen_epoch)
        all->seen_epoch = j->epoch;
    return r;
}

static unsigned alive(const struct med_journal *j)
{
    unsigned n = 0;
    for (int i = 0; i < j->nprocs; i++)
        n += vgpu_bar0_owner_alive(j->procs[i].pid, j->procs[i].start_time);
    return n;
}

/* The status part j names, from the first of its running processes that
 * maps it: a descriptor, or -1 with why. */
static int recover(const char *name, const struct med_journal *j, char *why, size_t len)
{
    snprintf(why, len, "no process of it runs");
    for (int i = 0; i < j->nprocs; i++) {
        const struct med_journal_proc *p = &j->procs[i];
        int fd = vgpu_bar0_owner_alive(p->pid, p->start_time)
                     ? med_host_window_recover(name, p->pid, j->status_dev, j->status_ino, why, len) : -1;
        if (fd >= 0)
            return fd;
    }
    return -1;
}

/* Makes v's window; a host vGPU's status part is taken back as j (if any)
 * names it, with j's records, or made anew. */
static int make_window(struct med_vgpu *v, const struct med_journal *j, bool create, char *err, size_t errlen)
{
    struct med_vgpus *all = v->all;
    if (v->conf.guest) {
        bool created;
        if (med_guest_window_open(all->dir, all->dir_path, v->conf.name, create, &v->regs, &created, &v->guest,
                                  err, errlen) != 0)
            return -1;
        v->bar = v->guest.bar;
        v->window_lost = false;
        return 0;
    }
    int fd = -1;
    unsigned running = j && !j->guest ? alive(j) : 0;
    if (running) {
        char why[512];
        if ((fd = recover(v->conf.name, j, why, sizeof(why))) < 0)
            vgpu_warn("vGPU %s: %u process(es) admitted before this start still run, but its window cannot be taken "
                      "back from them (%s): they are no longer counted; start them again", v->conf.name, running,
                      why);
    }
    if (med_host_window_make(v->conf.name, &v->regs, fd, &v->host, err, errlen) != 0)
        return -1;
    v->bar = v->host.bar;
    if (fd >= 0)
        med_vgpu_carry(v, j->procs, j->nprocs);
    return 0;
}

/* A vGPU of the config: its window made, or its processes found again. */
static struct med_vgpu *open_vgpu(struct med_vgpus *all, const struct med_config *c, const struct med_vgpu_conf *conf,
                                  const struct med_gpus *g, char *err, size_t errlen)
{
    struct med_vgpu *v = new_vgpu(all, conf);
    if (!v) {
        vgpu_fail(err, errlen, "out of memory");
        return NULL;
    }
    registers(conf, g, &v->regs);
    struct med_journal j;
    int r = read_journal(all, conf->name, &j, err, errlen);
    unsigned running = r == 1 ? alive(&j) : 0;
    if (r < 0)
        goto fail;
    if (r == 1 && j.guest != conf->guest && running) {
        vgpu_fail(err, errlen, "%s:%d: vGPU %s: guest = changed while its %u process(es) run; give it back, or let "
                  "them exit", c->path, conf->guest_line ? conf->guest_line : conf->line, conf->name, running);
        goto fail;
    }
    if (r == 1 && j.guest && !conf->guest)
        med_guest_window_remove(all->dir, conf->name); /* its VM's window of before */
    if (r == 1 && !conf->guest && running && !same_devices(&j.regs, &v->regs)) {
        /* Its processes' devices came from the window: they cannot move. */
        vgpu_fail(err, errlen, "%s:%d: vGPU %s: its %u running process(es) use other GPUs than this config gives it "
                  "(%s first); a vGPU's devices change only while no process uses it: give it its devices back, or "
                  "let its processes exit", c->path, conf->devices_line, conf->name, running,
                  j.regs.device[0].physical);
        goto fail;
    }
    if (make_window(v, r == 1 && j.guest == conf->guest ? &j : NULL, true, err, errlen) != 0)
        goto fail;
    if (r == 1 && conf->cls[0]) /* the container it was given to keeps it across a restart */
        snprintf(v->bound, sizeof(v->bound), "%s", j.cgroup);
    if (r == 1)
        med_journal_free(&j);
    apply(v, conf, g);
    if (v->nadm)
        report_found(v);
    return v;
fail:
    if (r == 1)
        med_journal_free(&j);
    close_vgpu(v);
    return NULL;
}

/* A journal in state_dir of a vGPU the config no longer has: kept, admitting
 * nobody, while its processes live, as on a reload.  -1 (err) only when
 * the journal is not to be trusted. */
static int adopt_orphan(struct med_vgpus *all, const struct med_gpus *g, const char *name, char *err, size_t errlen)
{
    struct med_journal j;
    int r = read_journal(all, name, &j, err, errlen);
    if (r <= 0)
        return r;
    struct med_vgpu_conf conf = { .guest = j.guest, .compute = 100 };
    snprintf(conf.name, sizeof(conf.name), "%s", name);
    conf.ndev = (int)j.regs.device_count;
    for (int d = 0; d < conf.ndev; d++)
        memcpy(conf.devices[d], j.regs.device[d].physical, sizeof(conf.devices[d]));
    if (conf.ndev) {
        conf.memory = atomic_load(&j.regs.device[0].memory_limit);
        conf.compute = j.regs.device[0].compute_share;
        conf.compute_mode = j.regs.device[0].compute_mode;
    }
    struct med_vgpu *v = all->n < (int)(sizeof(all->v) / sizeof(*all->v)) ? new_vgpu(all, &conf) : NULL;
    char why[1024] = "too many vGPUs";
    if (v) {
        v->regs = j.regs;
        v->retired = true;
    }
    if (v && make_window(v, &j, false, why, sizeof(why)) == 0 && users(v)) {
        for (int d = 0; d < conf.ndev; d++)
            v->gpu[d] = med_gpus_find(g, conf.devices[d]);
        all->v[all->n++] = v;
        report_found(v);
    } else {
        if (v && v->bar)
            vgpu_info("vGPU %s, gone from the config, has no process left: removed", name);
        else
            vgpu_warn("vGPU %s, gone from the config, is dropped: %s", name, why);
        if (v) {
            remove_files(v);
            close_vgpu(v);
        }
    }
    med_journal_free(&j);
    return 0;
}

/* What an older mediator left in state_dir: a host vGPU's window as two
 * files, which its processes map.  Nothing can be taken back from them. */
static void remove_old_layout(struct med_vgpus *all, const char *file, const char *name)
{
    if (unlinkat(all->dir, file, 0) == 0 && strstr(file, ".status"))
        vgpu_warn("vGPU %s: removed %s/%s.config and .status, an older vgpu-mediatord's window; processes "
                  "still running from before the upgrade keep their vGPU but are no longer counted: start them again",
                  name, all->dir_path, name);
}

/* Every journal in state_dir of a vGPU the config does not name. */
static int adopt_orphans(struct med_vgpus *all, const struct med_gpus *g, char *err, size_t errlen)
{
    int fd = fcntl(all->dir, F_DUPFD_CLOEXEC, 0);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return vgpu_fail(err, errlen, "cannot list state_dir %s: %s", all->dir_path, strerror(errno));
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        const char *dot = strrchr(e->d_name, '.');
        char name[VGPU_NAME_LEN];
        if (!dot || dot == e->d_name || dot - e->d_name >= (long)sizeof(name))
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)(dot - e->d_name), e->d_name);
        if (!med_config_valid_name(name))
            continue;
        if (strcmp(dot, ".config") == 0 || strcmp(dot, ".status") == 0)
            remove_old_layout(all, e->d_name, name);
        else if (strcmp(dot, ".journal") == 0 && !med_vgpus_find(all, name))
            rc = adopt_orphan(all, g, name, err, errlen);
    }
    closedir(d);
    return rc;
}

int med_vgpus_open(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g, char *err,
                   size_t errlen)
{
    memset(all, 0, sizeof(*all));
    snprintf(all->dir_path, sizeof(all->dir_path), "%s", c->state_dir);
    if ((all->dir = med_state_dir_open(c->state_dir, err, errlen)) < 0)
        return -1;
    for (int i = 0; i < c->nvgpus; i++) {
        struct med_vgpu *v = open_vgpu(all, c, &c->vgpu[i], g, err, errlen);
        if (!v)
            return -1;
        all->v[all->n++] = v;
        serve_vm(all, c, v);
    }
    if (adopt_orphans(all, g, err, errlen) != 0)
        return -1;
    all->epoch = all->seen_epoch + 1;
    for (int i = 0; i < all->n; i++)
        all->v[i]->dirty = true;
    med_vgpus_flush(all);
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

/*
 * The smallest size of a process's first context on gpu that a vGPU's
 * processes measured (docs/design/memory.md), and which vGPU's; 0 when none has.
 * Written by processes, so only a reason to refuse a quota that could never
 * hold one, named with where it came from.
 */
static uint64_t context_size(const struct med_vgpus *all, const struct med_gpu *gpu, const char **measured_in)
{
    uint64_t least = 0;
    for (int i = 0; i < all->n; i++) {
        const struct med_vgpu *v = all->v[i];
        for (uint32_t d = 0; d < v->regs.device_count && d < VGPU_MAX_DEVICES; d++) {
            uint64_t size = atomic_load(&v->bar->status.device[d].context_overhead);
            if (size && strcmp(v->regs.device[d].physical, gpu->uuid) == 0 && (!least || size < least)) {
                least = size;
                *measured_in = v->conf.name;
            }
        }
    }
    return least;
}

/* A quota smaller than one context on one of its GPUs can run nothing. */
static int check_quota_holds_a_context(const struct med_vgpus *all, const struct med_config *c,
                                       const struct med_vgpu_conf *conf, const struct med_gpus *g, char *err,
                                       size_t errlen)
{
    for (int d = 0; conf->memory && d < conf->ndev; d++) {
        const struct med_gpu *gpu = med_gpus_find(g, conf->devices[d]);
        const char *where = NULL;
        uint64_t size = gpu ? context_size(all, gpu, &where) : 0;
        if (size > conf->memory) {
            char quota[32], need[32];
            return vgpu_fail(err, errlen, "%s:%d: vGPU %s: memory = %s is smaller than one CUDA context on GPU %u "
                             "(%s), which takes %s (measured by a process of vGPU %s): no CUDA program could run "
                             "in it; give it at least %s plus what its programs allocate", c->path,
                             conf->memory_line ? conf->memory_line : conf->line, conf->name,
                             vgpu_format_size(conf->memory, quota, sizeof(quota)), gpu->index, gpu->uuid,
                             vgpu_format_size(size, need, sizeof(need)), where, need);
        }
    }
    return 0;
}

int med_vgpus_check_reload(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g, char *err,
                           size_t errlen)
{
    for (int i = 0; i < c->nvgpus; i++) {
        const struct med_vgpu_conf *conf = &c->vgpu[i];
        if (check_quota_holds_a_context(all, c, conf, g, err, errlen) != 0)
            return -1;
        const struct med_vgpu *v = med_vgpus_find(all, conf->name);
        if (!v)
            continue;
        if (v->conf.guest != conf->guest)
            return vgpu_fail(err, errlen, "%s:%d: vGPU %s: guest = cannot change while the vGPU exists; remove it, "
                             "reload, then add it back", c->path, conf->guest_line ? conf->guest_line : conf->line,
                             conf->name);
        /* A VM's window is the VM's to write: its word blocks nothing. */
        unsigned n = conf->guest ? 0 : users(v);
        if (n && moves(v, conf, g))
            return vgpu_fail(err, errlen, "%s:%d: vGPU %s: its devices cannot change while %u process(es) use it",
                             c->path, conf->devices_line, conf->name, n);
    }
    if (all->n + c->nvgpus > (int)(sizeof(all->v) / sizeof(*all->v)))
        return vgpu_fail(err, errlen, "%s: too many vGPUs, counting the retired ones still in use", c->path);
    return 0;
}

/* A retired VM's window, made whole again by a reload. */
static void remake_window(struct med_vgpu *v, const struct med_vgpu_conf *conf)
{
    char err[1024];
    struct med_guest_window lost = v->guest; /* memory of the mediator's own, since it was retired */
    v->conf = *conf;
    if (make_window(v, NULL, true, err, sizeof(err)) != 0) {
        vgpu_error("vGPU %s: its window stays retired: %s", conf->name, err);
        v->guest = lost;
        v->bar = lost.bar;
        return;
    }
    med_guest_window_close(&lost);
    vgpu_info("vGPU %s: its window is whole again", conf->name);
}

int med_vgpus_reload(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g)
{
    all->generation++;
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
            if (v->window_lost)
                remake_window(v, conf);
            apply(v, conf, g);
            serve_vm(all, c, v);
            continue;
        }
        char err[1024];
        if (!(v = open_vgpu(all, c, conf, g, err, sizeof(err)))) {
            vgpu_error("vGPU %s: %s", conf->name, err);
            failed++;
            continue;
        }
        if (!conf->guest)
            atomic_store(&v->bar->status.mediator_epoch, all->epoch);
        all->v[all->n++] = v;
        serve_vm(all, c, v);
        vgpu_info("vGPU %s: added", conf->name);
    }
    return failed;
}

/*
 * The window's counters, as the slots the mediator gave hold them: a slot
 * it never gave that says LIVE was written by a process of the vGPU, and
 * is cleared first, so that only the mediator's own slots are summed
 * (vgpu_bar0_rebuild: a process killed between two updates, or a stray
 * write, leaves the counters wrong otherwise).
 */
static void rebuild_counters(struct med_vgpu *v)
{
    for (int s = 0; s < VGPU_BAR0_MAX_PROCS; s++) {
        uint64_t o = atomic_load(&v->bar->procs[s].owner);
        if (v->slot_of[s])
            continue;
        /* A slot the mediator gave no one is not busy: a tenant that says
         * so would keep the counters from being mended. */
        atomic_store(&v->bar->procs[s].busy, 0);
        if (o == 0)
            continue;
        if (!v->forged_warned)
            vgpu_warn("vGPU %s: slot %d says owner 0x%llx, but the mediator gave it to no one: a process of the vGPU "
                      "wrote it; cleared (said once)", v->conf.name, s, (unsigned long long)o);
        v->forged_warned = true;
        atomic_store(&v->bar->procs[s].owner, 0);
    }
    vgpu_bar0_rebuild(v->bar);
}

/* A VM's window whose file shrank is retired (guest_window.h): the
 * mediator touches only memory of its own in its place from then on. */
static void check_window(struct med_vgpu *v)
{
    long long size;
    if (!v->conf.guest || v->window_lost || med_guest_window_intact(&v->guest, &size))
        return;
    v->window_lost = true;
    vgpu_error("vGPU %s: its window %s/%s.bar0 shrank (to %lld bytes): someone who may write it (its VM's group) "
               "truncated it. The vGPU is retired: its VM's processes are no longer counted, the other vGPUs go "
               "on. A reload or a restart of vgpu-mediatord makes the window whole again; its VM's CUDA processes "
               "then start again", v->conf.name, v->all->dir_path, v->conf.name, size);
}

void med_vgpus_scan(struct med_vgpus *all)
{
    for (int i = 0; i < all->n; i++) {
        struct med_vgpu *v = all->v[i];
        check_window(v);
        for (int k = v->nadm - 1; k >= 0; k--) {
            struct med_admission *a = v->adm[k];
            if (a->connected || vgpu_bar0_owner_alive(a->pid, a->start_time))
                continue;
            char who[64];
            snprintf(who, sizeof(who), "process %d (not reattached)", (int)a->pid);
            med_vgpu_leave(v, a, who);
        }
        if (!v->conf.guest)
            rebuild_counters(v);
        if (v->journal_failing)
            med_vgpu_journal(v); /* tried again once a second, not on every event */
        if (v->retired && users(v) == 0) {
            vgpu_info("vGPU %s: removed", v->conf.name);
            remove_files(v);
            close_vgpu(v);
            all->v[i--] = all->v[--all->n];
        }
    }
}

void med_vgpus_flush(struct med_vgpus *all)
{
    for (int i = 0; i < all->n; i++)
        if (all->v[i]->dirty && !all->v[i]->journal_failing)
            med_vgpu_journal(all->v[i]);
}
