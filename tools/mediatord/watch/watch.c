/* The mediator's watch: the driver's readings against the admissions; see watch.h. */
#define _GNU_SOURCE
#include "tools/mediatord/watch/watch.h"

#include "common/error.h"
#include "common/log.h"
#include "tools/mediatord/watch/watch_kill.h"
#include "common/contract/settings/settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int med_watch_start(struct med_watch *w, const struct med_gpus *g, char *err, size_t errlen)
{
    memset(w, 0, sizeof(*w));
    w->gpus = g;
    if (gethostname(w->hostname, sizeof(w->hostname) - 1) != 0)
        snprintf(w->hostname, sizeof(w->hostname), "localhost");
    w->sampler = med_sampler_start(g, MED_SAMPLE_PROCESSES, err, errlen);
    return w->sampler ? 0 : -1;
}

int med_watch_fd(const struct med_watch *w)
{
    return med_sampler_fd(w->sampler);
}

static int index_of(const struct med_watch *w, const struct med_gpu *gpu)
{
    return (int)(gpu - w->gpus->gpu);
}

/* GPUs host vGPUs use, less any a VM's vGPU names: a VM's processes are
 * its own, and the host cannot tell them from anyone else's. */
static uint64_t managed(const struct med_watch *w, const struct med_vgpus *all)
{
    uint64_t host = 0, guest = 0;
    for (int i = 0; i < all->n; i++) {
        const struct med_vgpu *v = all->v[i];
        for (uint32_t d = 0; d < v->regs.device_count && d < VGPU_MAX_DEVICES; d++)
            if (v->gpu[d])
                *(v->conf.guest ? &guest : &host) |= 1ull << index_of(w, v->gpu[d]);
    }
    return host & ~guest;
}

static void drop(struct med_watch *w, int i)
{
    w->cases[i] = w->cases[--w->ncases];
}

/* Says what the watch does from now on. */
static void announce(const struct med_watch *w, const struct med_config *c, uint64_t gpus)
{
    char list[256] = "", tol[32];
    size_t n = 0;
    for (int k = 0; k < w->gpus->n && n < sizeof(list); k++)
        if (gpus >> k & 1)
            n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%u", n ? ", " : "", w->gpus->gpu[k].index);
    if (!c->watch_interval_ms)
        vgpu_info("watch: off (watch_interval = 0 in %s)", c->path);
    else if (!gpus)
        vgpu_info("watch: no GPU to watch (no host vGPU uses one)");
    else
        vgpu_info("watch: GPU(s) %s, a reading every %u ms; tolerance %s + %u%% of the quota; unadmitted "
                  "processes are %s", list, c->watch_interval_ms,
                  c->watch_tolerance_bytes ? vgpu_format_size(c->watch_tolerance_bytes, tol, sizeof(tol)) : "0",
                  c->watch_tolerance_percent, c->kill_unadmitted ? "killed" : "reported");
}

/* Is vGPU name (a host one) on GPU gpu (a med_gpus index)? */
static bool on_gpu(const struct med_watch *w, struct med_vgpus *all, const char *name, int gpu)
{
    const struct med_vgpu *v = med_vgpus_find(all, name);
    for (uint32_t d = 0; v && !v->conf.guest && d < v->regs.device_count && d < VGPU_MAX_DEVICES; d++)
        if (v->gpu[d] && index_of(w, v->gpu[d]) == gpu)
            return true;
    return false;
}

/* Is the case's process (pid and start time) still running? */
static bool still_runs(const struct med_watch_case *c)
{
    struct med_proc p;
    return med_proc_read(c->pid, &p) && !p.ended && p.start_time == c->proc.start_time;
}

void med_watch_configure(struct med_watch *w, const struct med_world *world)
{
    const struct med_config *c = world->config;
    uint64_t gpus = c->watch_interval_ms ? managed(w, world->vgpus) : 0;
    if (c != w->config || gpus != w->watched || !w->configured)
        announce(w, c, gpus);
    w->config = c;
    w->configured = true;
    /* A GPU no longer watched has no cases: they could never end.  Nor has
     * a vGPU that is gone, or no longer on the GPU, over its share, nor a
     * process that ended: the share's check finds them no more. */
    for (int i = 0; i < w->ncases; i++)
        if (!(gpus >> w->cases[i].gpu & 1) || (w->cases[i].rule == VGPU_WATCH_OVER_SHARE &&
                                               (!on_gpu(w, world->vgpus, w->cases[i].vgpu, w->cases[i].gpu) ||
                                                !still_runs(&w->cases[i]))))
            drop(w, i--);
    w->interval_ms = c->watch_interval_ms;
    w->watched = gpus;
    med_sampler_set(w->sampler, gpus ? w->interval_ms : 0, gpus);
}

/* ---- judging a reading ---- */

/* A rule, as the log names it. */
static const char *const rule_words[] = { "", "unadmitted", "over its vGPU's quota", "in its vGPU's excess",
                                          "over its vGPU's compute share" };

/* NVML says (unsigned long long)NVML_VALUE_NOT_AVAILABLE where it will not
 * tell (a caller without the privilege, some virtualised GPUs). */
static bool known(uint64_t bytes)
{
    return bytes != (uint64_t)(unsigned long long)NVML_VALUE_NOT_AVAILABLE;
}

static uint64_t tolerance(const struct med_config *c, uint64_t quota)
{
    return c->watch_tolerance_bytes + quota / 100 * c->watch_tolerance_percent;
}

static bool in_ids(uint32_t id, const uint32_t *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] == id)
            return true;
    return false;
}

static bool exempt(const struct med_config *c, const struct med_proc *p)
{
    if (!p->ids_known)
        return false;
    if (in_ids(p->uid, c->exempt_uids, c->nexempt_uids) || in_ids(p->gid, c->exempt_gids, c->nexempt_gids))
        return true;
    for (int i = 0; i < p->ngroups; i++)
        if (in_ids(p->groups[i], c->exempt_gids, c->nexempt_gids))
            return true;
    return false;
}

/* The host vGPU using gpu that admitted pid (started at start_time), by
 * the mediator's records; *dev is gpu's index among its devices. */
static struct med_vgpu *admitted_to(const struct med_vgpus *all, const struct med_gpu *gpu, pid_t pid,
                                    uint64_t start_time, int *dev)
{
    for (int i = 0; i < all->n; i++) {
        struct med_vgpu *v = all->v[i];
        for (uint32_t d = 0; !v->conf.guest && d < v->regs.device_count && d < VGPU_MAX_DEVICES; d++) {
            if (v->gpu[d] != gpu)
                continue;
            for (int k = 0; k < v->nadm; k++)
                if (v->adm[k]->pid == pid && v->adm[k]->start_time == start_time) {
                    *dev = (int)d;
                    return v;
                }
        }
    }
    return NULL;
}

/* A process of a reading: who it is, and what the records say of it. */
struct member {
    pid_t pid;
    uint64_t used;
    struct med_proc proc;
    struct med_vgpu *v; /* admitted to, or NULL */
    int dev;
    bool over;          /* alone over its vGPU's quota */
};

/* One vGPU's processes on the GPU. */
struct group {
    const struct med_vgpu *v;
    int dev;
    uint64_t quota, sum;
    bool anyone_over;
};

struct finding {
    const struct member *m;
    enum vgpu_watch_rule rule;
    const char *vgpu;
    uint64_t quota, vgpu_used;
};

/* This reading found an unadmitted process of uid: whether its user's
 * processes were found so in enough of the last readings. */
static bool user_repeats(struct med_watch *w, uint32_t uid)
{
    struct med_watch_user *u = NULL, *oldest = &w->users[0];
    for (int i = 0; i < MED_WATCH_MAX_USERS && !u; i++) {
        if (w->users[i].reading && w->users[i].uid == uid)
            u = &w->users[i];
        else if (w->users[i].reading < oldest->reading)
            oldest = &w->users[i];
    }
    if (!u) {
        u = oldest;
        *u = (struct med_watch_user){ .uid = uid };
    }
    if (u->reading != w->readings) {
        uint64_t gap = u->reading ? w->readings - u->reading : 32;
        u->found = (gap >= 32 ? 0 : u->found << gap) | 1;
        u->reading = w->readings;
    }
    return __builtin_popcount(u->found & ((1u << MED_WATCH_USER_READINGS) - 1)) >= MED_WATCH_USER_FOUND;
}

/* The case f continues, or a new one: it was found so in this reading. */
static void observe(struct med_watch *w, int gpu, const struct finding *f, uint64_t now_ms)
{
    const struct member *m = f->m;
    struct med_watch_case *c = NULL;
    for (int i = 0; i < w->ncases && !c; i++) {
        struct med_watch_case *k = &w->cases[i];
        if (k->pid == m->pid && k->proc.start_time == m->proc.start_time && k->gpu == gpu && k->rule == f->rule &&
            strcmp(k->vgpu, f->vgpu) == 0)
            c = k;
    }
    if (!c) {
        unsigned long held;
        if (w->ncases == MED_WATCH_MAX_CASES) {
            if (med_ratelimit_allow(&w->full_log, now_ms, &held))
                vgpu_warn("watch: %d processes are being followed, its most; pid %d on GPU %u waits for room (%lu "
                          "more waited in the last second)", MED_WATCH_MAX_CASES, (int)m->pid,
                          w->gpus->gpu[gpu].index, held);
            return;
        }
        c = &w->cases[w->ncases++];
        memset(c, 0, sizeof(*c));
        c->pid = m->pid;
        c->gpu = gpu;
        c->rule = f->rule;
        snprintf(c->vgpu, sizeof(c->vgpu), "%s", f->vgpu);
        c->proc = m->proc;
        c->first_ms = now_ms;
        med_read_comm(m->pid, c->comm, sizeof(c->comm));
        med_user_name(m->proc.uid, m->proc.ids_known, c->user, sizeof(c->user));
        vgpu_debug("watch: pid %d (%s) found %s on GPU %u; reported if the next reading finds it so too",
                   (int)m->pid, c->comm, rule_words[f->rule], w->gpus->gpu[gpu].index);
    }
    c->used = m->used;
    c->quota = f->quota;
    c->vgpu_used = f->vgpu_used;
    if (c->reading != w->readings) /* the driver may list a process twice */
        c->streak = c->reading == w->readings - 1 ? c->streak + 1 : 1;
    c->reading = w->readings;
    /* Processes that come and go within a reading: counted by their user. */
    if (f->rule == VGPU_WATCH_UNADMITTED && m->proc.ids_known && user_repeats(w, m->proc.uid) && c->streak < 2) {
        c->streak = 2;
        c->by_user = true;
    }
}

static struct group *group_of(struct group *groups, int *n, const struct member *m)
{
    for (int i = 0; i < *n; i++)
        if (groups[i].v == m->v && groups[i].dev == m->dev)
            return &groups[i];
    struct group *g = &groups[(*n)++];
    *g = (struct group){ .v = m->v, .dev = m->dev,
                         .quota = atomic_load(&m->v->regs.device[m->dev].memory_limit) };
    return g;
}

static void judge_gpu(struct med_watch *w, const struct med_world *world, const struct med_reading_gpu *g,
                      uint64_t now_ms)
{
    const struct med_config *c = world->config;
    const struct med_gpu *gpu = &w->gpus->gpu[g->gpu];
    struct member *m = calloc(g->n ? g->n : 1, sizeof(*m));
    struct group groups[MED_MAX_VGPUS * 2];
    int nm = 0, ngroups = 0;
    if (!m)
        return;
    for (unsigned j = 0; j < g->n; j++) {
        struct member *x = &m[nm];
        x->pid = (pid_t)g->procs[j].pid;
        /* Gone since, or ending (its memory is on its way back): a process
         * that exits is no finding. */
        if (x->pid <= 0 || x->pid == getpid() || !med_proc_read(x->pid, &x->proc) || x->proc.ended)
            continue;
        x->used = g->procs[j].usedGpuMemory;
        x->v = admitted_to(world->vgpus, gpu, x->pid, x->proc.start_time, &x->dev);
        nm++;
    }
    for (int i = 0; i < nm; i++) {
        struct member *x = &m[i];
        if (!x->v) {
            if (!exempt(c, &x->proc))
                observe(w, g->gpu, &(struct finding){ .m = x, .rule = VGPU_WATCH_UNADMITTED, .vgpu = "" }, now_ms);
            continue;
        }
        struct group *k = group_of(groups, &ngroups, x);
        k->sum += known(x->used) ? x->used : 0;
        /* No quota: the whole GPU is the vGPU's, and the driver bounds it. */
        if (k->quota && known(x->used) && x->used > k->quota + tolerance(c, k->quota)) {
            x->over = k->anyone_over = true;
            observe(w, g->gpu, &(struct finding){ .m = x, .rule = VGPU_WATCH_OVER_QUOTA, .vgpu = x->v->conf.name,
                                                  .quota = k->quota }, now_ms);
        }
    }
    /* A vGPU over its quota that no one process explains: all of them are named. */
    for (int i = 0; i < nm; i++) {
        struct member *x = &m[i];
        struct group *k = x->v ? group_of(groups, &ngroups, x) : NULL;
        if (k && k->quota && !k->anyone_over && k->sum > k->quota + tolerance(c, k->quota))
            observe(w, g->gpu, &(struct finding){ .m = x, .rule = VGPU_WATCH_VGPU_OVER_QUOTA,
                                                  .vgpu = x->v->conf.name, .quota = k->quota,
                                                  .vgpu_used = k->sum }, now_ms);
    }
    free(m);
}

/* ---- reporting and enforcing ---- */

static const char *size_of(uint64_t bytes, char *buf, size_t len)
{
    return known(bytes) ? vgpu_format_size(bytes, buf, len) : "an amount the driver does not say";
}

/* "pid 4242 (python3, uid 1003 carol)" */
static void who(const struct med_watch_case *c, char *out, size_t len)
{
    if (c->proc.ids_known)
        snprintf(out, len, "pid %d (%s, uid %u %s)", (int)c->pid, c->comm, (unsigned)c->proc.uid, c->user);
    else
        snprintf(out, len, "pid %d (%s)", (int)c->pid, c->comm);
}

/* What the case is, as a log line says it after who. */
static void what(const struct med_watch *w, const struct med_config *cfg, const struct med_watch_case *c, char *out,
                 size_t len)
{
    const struct med_gpu *gpu = &w->gpus->gpu[c->gpu];
    char used[32], quota[32], sum[32], tol[32];
    size_of(c->used, used, sizeof(used));
    vgpu_format_size(c->quota, quota, sizeof(quota));
    vgpu_format_size(tolerance(cfg, c->quota), tol, sizeof(tol));
    switch (c->rule) {
    case VGPU_WATCH_UNADMITTED:
        snprintf(out, len, "holds %s on GPU %u (%s) and vgpu-mediatord admitted it to no vGPU there: it runs "
                 "without vgpu (LD_PRELOAD unset, a static program, or the device files used directly). Run it "
                 "under vgpu (vgpu-run, or the symlink install), or let its user use the GPU with exempt_uids = in "
                 "[mediator] of %.300s", used, gpu->index, gpu->uuid, cfg->path);
        break;
    case VGPU_WATCH_OVER_QUOTA:
        snprintf(out, len, "of vGPU %s holds %s on GPU %u (%s), over the vGPU's quota of %s there by more than the "
                 "tolerance (%s): it allocates around vgpu", c->vgpu, used, gpu->index, gpu->uuid, quota, tol);
        break;
    case VGPU_WATCH_VGPU_OVER_QUOTA:
        snprintf(out, len, "of vGPU %s holds %s on GPU %u (%s), and the vGPU's processes there together hold %s, over "
                 "its quota of %s by more than the tolerance (%s): they allocate around vgpu", c->vgpu, used,
                 gpu->index, gpu->uuid, vgpu_format_size(c->vgpu_used, sum, sizeof(sum)), quota, tol);
        break;
    case VGPU_WATCH_OVER_SHARE:
        snprintf(out, len, "of vGPU %s used %.1f%% of GPU %u (%s) over a second in which its vGPU, whose compute share "
                 "there is %.1f%%, was given none of it, and did so in %u of the last %u seconds: it launches around "
                 "vgpu's compute share (the device files, or a driver of its own)", c->vgpu, (double)c->used / 10,
                 gpu->index, gpu->uuid, (double)c->quota / 10, c->found, c->found_of);
        break;
    }
}

/* Does the config say to kill c?  Never an exempt process. */
static bool to_kill(const struct med_world *world, const struct med_watch_case *c)
{
    if (exempt(world->config, &c->proc))
        return false;
    if (c->rule == VGPU_WATCH_UNADMITTED)
        return world->config->kill_unadmitted;
    const struct med_vgpu *v = med_vgpus_find(world->vgpus, c->vgpu);
    return v && v->conf.kill_over_quota;
}

static void kill_case(struct med_watch *w, const struct med_world *world, struct med_watch_case *c)
{
    char name[96], why[256], section[48];
    who(c, name, sizeof(name));
    c->kill_tried = true;
    if (med_kill_verified(c->pid, c->proc.start_time, why, sizeof(why)) != 0) {
        vgpu_warn("watch: did not kill %s on GPU %u: %s", name, w->gpus->gpu[c->gpu].index, why);
        return;
    }
    c->killed = true;
    w->kills[c->gpu][c->rule == VGPU_WATCH_UNADMITTED ? 0 : c->rule == VGPU_WATCH_OVER_SHARE ? 2 : 1]++;
    if (c->rule == VGPU_WATCH_UNADMITTED)
        snprintf(section, sizeof(section), "[mediator]");
    else
        snprintf(section, sizeof(section), "[vgpu.%s]", c->vgpu);
    vgpu_warn("watch: killed %s on GPU %u with SIGKILL (enforce = kill in %s of %s)", name,
              w->gpus->gpu[c->gpu].index, section, world->config->path);
}

/* The vGPU-wide excess of c's vGPU on c's GPU: its processes go from the
 * largest down, until what the rest hold is within the quota. */
static void kill_for_vgpu(struct med_watch *w, const struct med_world *world, const struct med_watch_case *c)
{
    uint64_t within = c->quota + tolerance(world->config, c->quota), gone = 0;
    for (int i = 0; i < w->ncases; i++) {
        const struct med_watch_case *k = &w->cases[i];
        if (k->rule == c->rule && k->gpu == c->gpu && !strcmp(k->vgpu, c->vgpu) && k->killed && known(k->used))
            gone += k->used;
    }
    while (c->vgpu_used > within + gone) {
        struct med_watch_case *largest = NULL;
        for (int i = 0; i < w->ncases; i++) {
            struct med_watch_case *k = &w->cases[i];
            if (k->rule == c->rule && k->gpu == c->gpu && !strcmp(k->vgpu, c->vgpu) && k->reported && k->kill &&
                !k->kill_tried && known(k->used) && (!largest || k->used > largest->used))
                largest = k;
        }
        if (!largest)
            return;
        kill_case(w, world, largest);
        gone += largest->used;
    }
}

static void act(struct med_watch *w, struct med_world *world, uint64_t now_ms)
{
    for (int i = 0; i < w->ncases; i++) {
        struct med_watch_case *c = &w->cases[i];
        if (c->streak < 2)
            continue;
        /* Each reading: a reload that sets enforce = kill reaches the episodes under way. */
        c->kill = to_kill(world, c);
        if (c->reported)
            continue;
        char name[96], text[768];
        who(c, name, sizeof(name));
        what(w, world->config, c, text, sizeof(text));
        c->reported = true;
        c->reported_ms = now_ms;
        vgpu_warn("watch: %s %s%s%s", name, text,
                  c->by_user ? " (reported at first sight: unadmitted processes of its user were found in the "
                               "readings before)" : "",
                  c->kill ? "; enforce = kill: it is killed" : "");
    }
    for (int i = 0; i < w->ncases; i++) {
        struct med_watch_case *c = &w->cases[i];
        if (!c->reported || !c->kill || c->kill_tried)
            continue;
        if (c->rule == VGPU_WATCH_VGPU_OVER_QUOTA)
            kill_for_vgpu(w, world, c);
        else
            kill_case(w, world, c);
    }
}

/* Cases on the GPUs read that this reading did not find: their episode is over. */
static void end_episodes(struct med_watch *w, uint64_t read)
{
    for (int i = 0; i < w->ncases; i++) {
        struct med_watch_case *c = &w->cases[i];
        /* Over its share: found in the compute views' readings, ended there. */
        if (!(read >> c->gpu & 1) || c->reading == w->readings || c->rule == VGPU_WATCH_OVER_SHARE)
            continue;
        if (c->reported) {
            char name[96];
            who(c, name, sizeof(name));
            vgpu_info("watch: %s is no longer %s on GPU %u%s", name, rule_words[c->rule], w->gpus->gpu[c->gpu].index,
                      c->killed ? " (killed)" : "");
        }
        drop(w, i--);
    }
}

void med_watch_readable(struct med_watch *w, struct med_world *world, uint64_t now_ms)
{
    struct med_reading r;
    if (!med_sampler_take(w->sampler, &r))
        return;
    if (!w->cases && !(w->cases = calloc(MED_WATCH_MAX_CASES, sizeof(*w->cases)))) {
        med_reading_free(&r);
        return;
    }
    w->readings++;
    uint64_t read = 0;
    for (int i = 0; i < r.n; i++) {
        const struct med_reading_gpu *g = &r.gpu[i];
        if (!(w->watched >> g->gpu & 1))
            continue; /* no longer watched since the reading was taken */
        if (g->ok) {
            read |= 1ull << g->gpu;
            judge_gpu(w, world, g, now_ms);
            continue;
        }
        unsigned long held;
        w->failed_readings[g->gpu]++;
        if (med_ratelimit_allow(&w->fail_log, now_ms, &held))
            vgpu_warn("watch: the driver's NVML would not list the processes on GPU %u (%s); its findings wait for "
                      "the next reading (%lu more failed readings in the last second)", w->gpus->gpu[g->gpu].index,
                      w->gpus->gpu[g->gpu].uuid, held);
    }
    end_episodes(w, read);
    act(w, world, now_ms);
    med_reading_free(&r);
    med_watch_configure(w, world);
}

/* ---- over its compute share (watch_share.h finds it) ---- */

void med_watch_over_share(struct med_watch *w, struct med_world *world, int gpu, const char *vgpu,
                          const struct med_admission *a, uint16_t permille, uint16_t share, unsigned found,
                          unsigned of, uint64_t now_ms)
{
    if (!(w->watched >> gpu & 1) || (!w->cases && !(w->cases = calloc(MED_WATCH_MAX_CASES, sizeof(*w->cases)))))
        return;
    struct member m = { .pid = a->pid };
    if (!med_proc_read(a->pid, &m.proc) || m.proc.ended || m.proc.start_time != a->start_time)
        return; /* gone, or going: no finding */
    struct finding f = { .m = &m, .rule = VGPU_WATCH_OVER_SHARE, .vgpu = vgpu, .quota = share };
    m.used = permille;
    /* Counted by the share's check, not by the watch's readings: reported now. */
    observe(w, gpu, &f, now_ms);
    for (int i = 0; i < w->ncases; i++) {
        struct med_watch_case *c = &w->cases[i];
        if (c->rule == VGPU_WATCH_OVER_SHARE && c->pid == a->pid && c->gpu == gpu && !strcmp(c->vgpu, vgpu))
        {
            c->streak = c->streak < 2 ? 2 : c->streak;
            c->found = found;
            c->found_of = of;
        }
    }
    act(w, world, now_ms);
}

void med_watch_over_share_end(struct med_watch *w, int gpu, const char *vgpu)
{
    for (int i = 0; i < w->ncases; i++) {
        struct med_watch_case *c = &w->cases[i];
        if (c->rule != VGPU_WATCH_OVER_SHARE || c->gpu != gpu || strcmp(c->vgpu, vgpu) != 0)
            continue;
        if (c->reported) {
            char name[96];
            who(c, name, sizeof(name));
            vgpu_info("watch: %s uses GPU %u only in its vGPU's turns again%s", name, w->gpus->gpu[gpu].index,
                      c->killed ? " (killed)" : "");
        }
        drop(w, i--);
    }
}

/* ---- WATCH ---- */

static bool visible(const struct med_watch_case *c, const struct med_world *world, uid_t uid, gid_t gid,
                    const gid_t *groups, int ngroups)
{
    if (uid == 0 || uid == geteuid() || (c->proc.ids_known && c->proc.uid == uid))
        return true;
    const struct med_vgpu *v = c->vgpu[0] ? med_vgpus_find(world->vgpus, c->vgpu) : NULL;
    return v && med_config_admits(&v->conf, uid, gid, groups, ngroups);
}

uint8_t *med_watch_build(const struct med_watch *w, const struct med_world *world, uid_t uid, gid_t gid,
                         const gid_t *groups, int ngroups, uint64_t now_ms, uint32_t *len)
{
    const struct med_config *cfg = world->config;
    struct vgpu_watch_header h = { .interval_ms = w->interval_ms,
                                   .flags = cfg->kill_unadmitted ? VGPU_WATCH_KILL_UNADMITTED : 0,
                                   .tolerance_percent = cfg->watch_tolerance_percent,
                                   .tolerance_bytes = cfg->watch_tolerance_bytes, .readings = w->readings };
    for (int k = 0; k < w->gpus->n; k++) {
        if (w->watched >> k & 1 && w->gpus->gpu[k].index < 64)
            h.gpus |= 1ull << w->gpus->gpu[k].index;
        h.kills += w->kills[k][0] + w->kills[k][1] + w->kills[k][2];
    }
    uint8_t *out = calloc(1, sizeof(h) + (size_t)w->ncases * sizeof(struct vgpu_watch_case));
    if (!out)
        return NULL;
    uint8_t *q = out + sizeof(h);
    for (int i = 0; i < w->ncases && h.ncases < VGPU_WATCH_MAX_CASES; i++) {
        const struct med_watch_case *c = &w->cases[i];
        if (!c->reported || !visible(c, world, uid, gid, groups, ngroups))
            continue;
        const struct med_gpu *gpu = &w->gpus->gpu[c->gpu];
        struct vgpu_watch_case r = { .pid = (uint32_t)c->pid, .uid = c->proc.ids_known ? c->proc.uid : UINT32_MAX,
                                     .gpu = gpu->index, .rule = c->rule,
                                     .flags = (c->killed ? VGPU_WATCH_KILLED : 0) | (c->kill ? VGPU_WATCH_KILL : 0),
                                     .used = c->used, .quota = c->quota, .vgpu_used = c->vgpu_used,
                                     .seen_ms = now_ms - c->first_ms,
                                     .reported_ms = (uint32_t)(now_ms - c->reported_ms) };
        vgpu_proto_copy_string(r.uuid, sizeof(r.uuid), gpu->uuid);
        vgpu_proto_copy_string(r.comm, sizeof(r.comm), c->comm);
        vgpu_proto_copy_string(r.user, sizeof(r.user), c->user);
        vgpu_proto_copy_string(r.vgpu, sizeof(r.vgpu), c->vgpu);
        memcpy(q, &r, sizeof(r));
        q += sizeof(r);
        h.ncases++;
    }
    memcpy(out, &h, sizeof(h));
    *len = (uint32_t)(q - out);
    return out;
}
