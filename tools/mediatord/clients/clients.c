/* The mediator's connections; see clients.h and docs/reference/protocol.md. */
#define _GNU_SOURCE
#include "tools/mediatord/clients/clients.h"

#include "common/log.h"
#include "tools/mediatord/clients/status.h"
#include "tools/mediatord/remote/executor.h"
#include "tools/mediatord/remote/executors.h"
#include "tools/mediatord/ratelimit.h"
#include "tools/mediatord/watch/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

/* Caps refusing connections: the loop thread's, for the log's rate. */
static struct med_ratelimit cap_log;

/* The peer's supplementary groups, however many (the kernel says how much room it needs). */
static int peer_groups(int fd, gid_t **out)
{
    socklen_t len = 64 * sizeof(gid_t);
    for (int tries = 0; tries < 3; tries++) {
        gid_t *g = malloc(len ? len : sizeof(gid_t));
        if (!g)
            return 0;
        socklen_t have = len;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &have) == 0) {
            *out = g;
            return (int)(have / sizeof(gid_t));
        }
        free(g);
        if (errno != ERANGE)
            return 0;
        len = have;
    }
    return 0;
}

void med_client_refuse_fd(int fd, uint32_t code, const char *reason)
{
    struct vgpu_msg_refuse r = { .code = code };
    vgpu_proto_copy_string(r.reason, sizeof(r.reason), reason);
    struct med_sendq q = { 0 };
    med_sendq_send(&q, fd, VGPU_MSG_REFUSE, &r, sizeof(r), NULL, 0, 0);
    med_sendq_clear(&q); /* what a new socket cannot take at once is not waited for */
}

/*
 * The cap a new connection of uid would pass, said to it; false if none.
 * A user's connections are counted together, but those in a vGPU's cgroup
 * (home) apart, by that vGPU: containers all run as root, and one must not
 * take the others' share of root's connections.  The executors started
 * for a user's guests count as its connections (remote/executors.h), and
 * their own connections not again.
 */
static bool over_cap(struct med_world *w, uid_t uid, const struct med_vgpu *home, char *reason, size_t len)
{
    const struct med_config *c = w->config;
    struct med_client *one = NULL; /* its name is looked up once per connection, not per refusal */
    int mine = 0;
    for (int i = 0; i < w->nclients; i++)
        if (w->clients[i]->uid == uid && !w->clients[i]->executor &&
            med_cgroup_home(w, w->clients[i]->cgroup.path, NULL) == home) {
            one = w->clients[i];
            mine++;
        }
    med_executors_prune(w->executors);
    int executors = med_executors_of_uid(w->executors, uid, home ? home->conf.name : "");
    mine += executors;
    if (w->nclients + w->executors->n >= w->max_connections) {
        char started[48] = "";
        if (w->executors->n)
            snprintf(started, sizeof(started), " and %d executors", w->executors->n);
        snprintf(reason, len, "vgpu-mediatord has %d connections%s, its most: the operator raises max_connections in "
                 "[mediator] of %.200s (and the descriptor limit with it, now %d: LimitNOFILE= under systemd)",
                 w->nclients, started, c->path, w->fd_limit);
    } else if (mine >= c->max_connections_per_uid) {
        char user[32];
        if (one)
            snprintf(user, sizeof(user), "%s", med_client_user(one));
        else
            med_user_name(uid, true, user, sizeof(user));
        snprintf(reason, len, "uid %u (%s) has %d connections to vgpu-mediatord%s%s%s, the most one user may have: "
                 "end some of its processes, or the operator raises max_connections_per_uid in [mediator] of %.200s",
                 (unsigned)uid, user, mine, executors ? " (executors of its guests among them)" : "",
                 home ? " from the cgroup of vGPU " : "", home ? home->conf.name : "", c->path);
    } else
        return false;
    return true;
}

struct med_client *med_client_accept(int fd, struct med_world *w, uint64_t now_ms)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        vgpu_warn("a connection without peer credentials: %s", strerror(errno));
        return NULL;
    }
    char reason[VGPU_REASON_LEN];
    /* Its start time, then its cgroup (checked against that start time). */
    uint64_t start_time = cred.pid ? vgpu_proc_start_time(cred.pid) : 0;
    struct med_cgroup cgroup;
    med_cgroup_of(cred.pid, start_time, &cgroup);
    /* An executor's own connections: its record counted it from its start. */
    bool executor = cred.pid && med_executors_has(w->executors, cred.pid);
    if (!executor && over_cap(w, cred.uid, med_cgroup_home(w, cgroup.path, NULL), reason, sizeof(reason))) {
        unsigned long held;
        w->vgpus->refused_admissions++;
        if (med_ratelimit_allow(&cap_log, now_ms, &held))
            vgpu_warn("refused a connection of pid %d: %s (%lu more refused in the last second)", (int)cred.pid,
                      reason, held);
        med_client_refuse_fd(fd, VGPU_REFUSE_UNAVAILABLE, reason);
        return NULL;
    }
    if (cred.pid == 0) {
        /* The kernel could not name the process in this PID namespace. */
        snprintf(reason, sizeof(reason), "vgpu-mediatord cannot see this process (it is in a PID namespace the "
                 "mediator's does not contain): run vgpu-mediatord in the host's PID namespace");
        vgpu_warn("%s", reason);
        med_client_refuse_fd(fd, VGPU_REFUSE_UNAVAILABLE, reason);
        return NULL;
    }
    struct med_client *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->fd = fd;
    c->pid = cred.pid;
    c->uid = cred.uid;
    c->gid = cred.gid;
    c->last_ms = now_ms;
    c->ngroups = peer_groups(fd, &c->groups);
    c->start_time = start_time;
    c->cgroup = cgroup;
    c->executor = executor;
    med_read_comm(c->pid, c->comm, sizeof(c->comm));
    return c;
}

/* Answers (now, or once the socket takes it); false when it cannot. */
static bool send_or_drop(struct med_client *c, uint16_t type, const void *payload, uint32_t len, const int *fds,
                         int nfds)
{
    int r = med_sendq_send(&c->out, c->fd, type, payload, len, fds, nfds, c->last_ms);
    if (r != 0)
        vgpu_info("connection of pid %d (%s) dropped: cannot answer it (%s)", (int)c->pid, c->comm,
                  r == -ENOBUFS ? "the mediator's answers waiting for slow readers are at their most" : strerror(-r));
    return r == 0;
}

static bool refuse(struct med_client *c, uint32_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool refuse(struct med_client *c, uint32_t code, const char *fmt, ...)
{
    struct vgpu_msg_refuse r = { .code = code };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r.reason, sizeof(r.reason), fmt, ap);
    va_end(ap);
    vgpu_warn("refused pid %d (%s, uid %u): %s", (int)c->pid, c->comm, (unsigned)c->uid, r.reason);
    send_or_drop(c, VGPU_MSG_REFUSE, &r, sizeof(r), NULL, 0);
    return false;
}

static void describe_admits(const struct med_vgpu_conf *v, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < v->nuids && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%suid %u", n ? ", " : "", (unsigned)v->uids[i]);
    for (int i = 0; i < v->ngids && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%sgid %u", n ? ", " : "", (unsigned)v->gids[i]);
    for (int i = 0; i < v->ncgroups && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%scgroup %s", n ? ", " : "", v->cgroups[i]);
    if (v->cls[0] && n < len)
        snprintf(out + n, len - n, "%sthe container it is given to", n ? ", " : "");
}

/* rule: the length of the most specific cgroup rule of any vGPU that
 * holds c's cgroup (med_cgroup_home), 0 when none does, and c is admitted
 * by its uid and groups.  A process in a vGPU's cgroup is admitted there
 * alone (or nowhere, while that vGPU is retired). */
static bool admits(const struct med_vgpu *v, const struct med_client *c, size_t rule)
{
    if (v->retired)
        return false;
    if (rule)
        return med_vgpu_cgroup_match(v, c->cgroup.path) == rule;
    return !v->conf.cls[0] && med_config_admits(&v->conf, c->uid, c->gid, c->groups, c->ngroups);
}

/* Sends ADMIT, recorded (adm, or a new record) before the process hears it. */
static bool admit(struct med_client *c, struct med_world *w, struct med_vgpu *v, struct med_admission *adm)
{
    struct vgpu_msg_admit a = { .slot = adm ? (uint32_t)adm->slot : UINT32_MAX, .epoch = w->vgpus->epoch };
    vgpu_proto_copy_string(a.vgpu, sizeof(a.vgpu), v->conf.name);
    if (!adm && !(adm = med_vgpu_admit(v, c->pid, c->start_time, c->uid)))
        return false;
    c->vgpu = v;
    c->adm = adm;
    int fds[2] = { v->host.config_fd, v->host.status_fd };
    return send_or_drop(c, VGPU_MSG_ADMIT, &a, sizeof(a), fds, 2);
}

/* The vGPU a process asking for name ("": the mediator picks) is to be
 * in: the named one if it admits the process, else the first in the file
 * that does (and offers remote GPUs, when remote).  NULL when none: refused (the connection is to close). */
static struct med_vgpu *pick(struct med_client *c, struct med_world *w, const char *name, bool remote)
{
    struct med_vgpus *all = w->vgpus;
    struct med_vgpu *v = NULL;
    size_t rule;
    med_cgroup_home(w, c->cgroup.path, &rule);
    if (c->cgroup.unknown && med_cgroup_rules(w)) {
        all->refused_admissions++;
        refuse(c, VGPU_REFUSE_NOT_ADMITTED, "vGPUs here admit processes by their cgroups, and this one's cannot be "
               "told: %s", c->cgroup.unknown);
        return NULL;
    }
    if (name[0]) {
        v = med_vgpus_find(all, name);
        if (!v || v->retired || v->conf.guest) {
            all->refused_admissions++;
            refuse(c, VGPU_REFUSE_NOT_ADMITTED, "VGPU_NAME=%s: vgpu-mediatord has no such vGPU for host processes (%s)",
                   name, w->config->path);
            return NULL;
        }
        if (!admits(v, c, rule)) {
            char list[256];
            describe_admits(&v->conf, list, sizeof(list));
            v->refused_admissions++;
            all->refused_admissions++;
            if (rule)
                refuse(c, VGPU_REFUSE_NOT_ADMITTED, "vGPU %s does not admit cgroup %s, which is another vGPU's: a "
                       "container's processes use the vGPU it was given (unset VGPU_NAME)", v->conf.name, c->cgroup.path);
            else
                refuse(c, VGPU_REFUSE_NOT_ADMITTED, "vGPU %s does not admit uid %u (%s), gid %u; it admits %s",
                       v->conf.name, (unsigned)c->uid, med_client_user(c), (unsigned)c->gid, list);
            return NULL;
        }
        return v;
    }
    /* The first in the file that admits it (and, for a remote GPU, offers one). */
    for (int i = 0; i < w->config->nvgpus && !v; i++) {
        struct med_vgpu *candidate = med_vgpus_find(all, w->config->vgpu[i].name);
        if (candidate && admits(candidate, c, rule) && (!remote || candidate->conf.remote))
            v = candidate;
    }
    if (!v) {
        all->refused_admissions++;
        refuse(c, VGPU_REFUSE_NOT_ADMITTED, "no vGPU admits uid %u (%s), gid %u%s%s; an operator lists users in "
               "uids = or gids = (or cgroups in cgroups =) of a [vgpu.NAME] section of %s", (unsigned)c->uid,
               med_client_user(c), (unsigned)c->gid, c->cgroup.path[0] ? ", cgroup " : "", c->cgroup.path,
               w->config->path);
    }
    return v;
}

/* A new process asks to be admitted. */
static bool hello(struct med_client *c, struct med_world *w, const struct vgpu_msg_hello *h)
{
    struct med_vgpu *v = pick(c, w, h->vgpu, false);
    if (!v)
        return false;
    if (!admit(c, w, v, NULL))
        return false;
    vgpu_info("admitted pid %d (%s, uid %u) to vGPU %s", (int)c->pid, c->comm, (unsigned)c->uid, v->conf.name);
    return true;
}

/* A process with no GPU asks for an executor of its vGPU (docs/guide/remote.md):
 * told REMOTE_READY, its connection goes to an executor started as its
 * user, which is admitted to that vGPU by HELLO like any process.  The
 * mediator then lets the connection go (false: closed here, kept there). */
static bool remote(struct med_client *c, struct med_world *w, const struct vgpu_msg_hello *h)
{
    struct med_vgpu *v = pick(c, w, h->vgpu, true);
    if (!v)
        return false;
    if (!v->conf.remote)
        return refuse(c, VGPU_REFUSE_NOT_ADMITTED, "vGPU %s is not offered to processes with no GPU: an operator "
                      "sets remote = yes in its section of %s", v->conf.name, w->config->path);
    /* As the user the vGPU names, else as the guest's own. */
    struct med_executor_for f = { c->fd, c->uid, c->gid, c->groups, c->ngroups, v->conf.name, w->config->socket,
                                  NULL, c->cgroup.path, v->conf.executor_cgroup[0] ? v->conf.executor_cgroup : NULL };
    if (v->conf.has_executor_user) {
        f.uid = v->conf.executor_uid;
        f.gid = v->conf.executor_gid;
        f.groups = v->conf.executor_groups;
        f.ngroups = v->conf.executor_ngroups;
    }
    char why[512];
    if (med_executor_check(&f, why, sizeof(why)) != 0)
        return refuse(c, VGPU_REFUSE_UNAVAILABLE, "no remote GPU of vGPU %s for pid %d (%s): %s", v->conf.name,
                      (int)c->pid, c->comm, why);
    /* The executor takes this connection's place in its user's count
     * (over_cap), and one of the vGPU's. */
    med_executors_prune(w->executors);
    if (med_executors_of_vgpu(w->executors, v->conf.name) >= (int)v->conf.max_executors)
        return refuse(c, VGPU_REFUSE_UNAVAILABLE, "no remote GPU of vGPU %s for pid %d (%s): it has %d executors, "
                      "its most: end some of its guests, or the operator raises max_executors in [vgpu.%s] of %s",
                      v->conf.name, (int)c->pid, c->comm, med_executors_of_vgpu(w->executors, v->conf.name),
                      v->conf.name, w->config->path);
    const struct med_vgpu *home = med_cgroup_home(w, c->cgroup.path, NULL);
    struct vgpu_msg_admit a = { .slot = UINT32_MAX, .epoch = w->vgpus->epoch };
    vgpu_proto_copy_string(a.vgpu, sizeof(a.vgpu), v->conf.name);
    /* Said before the executor starts, and not queued: once it runs, the
     * connection's next bytes are the executor's. */
    if (vgpu_proto_send(c->fd, VGPU_MSG_REMOTE_READY, &a, sizeof(a), NULL, 0) != 0) {
        vgpu_warn("pid %d (%s): could not say REMOTE_READY: %s", (int)c->pid, c->comm, strerror(errno));
        return false;
    }
    struct med_executor_started started;
    if (med_executor_start(&f, &started, why, sizeof(why)) != 0) {
        vgpu_error("pid %d (%s, uid %u) asked for a remote GPU of vGPU %s: %s", (int)c->pid, c->comm,
                   (unsigned)c->uid, v->conf.name, why);
        return false;
    }
    struct med_executor_record r = { .pidfd = started.pidfd, .pid = started.pid, .guest_uid = c->uid };
    snprintf(r.home, sizeof(r.home), "%s", home ? home->conf.name : "");
    snprintf(r.vgpu, sizeof(r.vgpu), "%s", v->conf.name);
    if (started.pidfd < 0 || !med_executors_add(w->executors, &r))
        vgpu_warn("the executor of pid %d (%s) is not counted against its caps: %s", (int)c->pid, c->comm,
                  started.pidfd < 0 ? "the kernel gives no pidfd" : "out of memory");
    vgpu_info("pid %d (%s, uid %u) has a remote GPU of vGPU %s: executor %d serves it, in cgroup %s", (int)c->pid,
              c->comm, (unsigned)c->uid, v->conf.name, (int)started.pid,
              started.cgroup[0] ? started.cgroup : "(vgpu-mediatord's)");
    return false;
}

/* PIN from an executor this mediator started: its guest's page-locked
 * memory, counted against its vGPU's pinned = across the vGPU's executors;
 * an executor that ends gives its bytes back with its record. */
static bool pin(struct med_client *c, struct med_world *w, const struct vgpu_msg_pin *q)
{
    med_executors_prune(w->executors);
    struct med_executor_record *r = c->executor ? med_executors_find(w->executors, c->pid) : NULL;
    if (!r)
        return refuse(c, VGPU_REFUSE_BAD_REQUEST, "PIN is taken from an executor vgpu-mediatord started alone");
    const struct med_vgpu *v = med_vgpus_find(w->vgpus, r->vgpu);
    struct vgpu_msg_pinned a = { .limit = v ? v->conf.pinned : 0 };
    uint64_t held = med_executors_pinned(w->executors, r->vgpu);
    if (q->flags & VGPU_PIN_RELEASE) {
        r->pinned -= q->bytes < r->pinned ? q->bytes : r->pinned;
        a.granted = 1;
    } else if (v && !v->retired && q->bytes <= a.limit && held <= a.limit - q->bytes) {
        r->pinned += q->bytes;
        a.granted = 1;
    }
    a.held = r->pinned;
    a.vgpu_held = med_executors_pinned(w->executors, r->vgpu);
    return send_or_drop(c, VGPU_MSG_PINNED, &a, sizeof(a), NULL, 0);
}

/* BIND: a container runtime's hook, or the device plugin (cgroups.h). */
static bool bind_vgpu(struct med_client *c, struct med_world *w, const struct vgpu_msg_bind *b)
{
    struct vgpu_msg_bound r;
    char why[VGPU_REASON_LEN];
    int code = med_cgroup_bind(w, c->pid, c->start_time, c->uid, b, &r, why, sizeof(why));
    if (code)
        return refuse(c, (uint32_t)code, "%s", why);
    return send_or_drop(c, VGPU_MSG_BOUND, &r, sizeof(r), NULL, 0);
}

/* A running process takes its slot back after a mediator restart: only
 * the process the mediator's records give it to (pid and start time, as
 * this mediator sees them), never on the word of the process table. */
static bool reattach(struct med_client *c, struct med_world *w, const struct vgpu_msg_hello *h)
{
    struct med_vgpu *v = med_vgpus_find(w->vgpus, h->vgpu);
    struct med_admission *a = v && !v->conf.guest ? med_vgpu_reattach(v, h->slot, c->pid, c->start_time) : NULL;
    if (!a)
        return refuse(c, VGPU_REFUSE_NOT_ADMITTED, "slot %u of vGPU %s is not this process's", h->slot, h->vgpu);
    if (!admit(c, w, v, a))
        return false;
    vgpu_info("pid %d (%s) reattached to vGPU %s, slot %u", (int)c->pid, c->comm, v->conf.name, h->slot);
    return true;
}

static bool enter(struct med_client *c)
{
    struct med_vgpu *v = c->vgpu;
    int slot = med_vgpu_claim(v, c->adm);
    if (slot == MED_CLAIM_PID_FULL)
        return refuse(c, VGPU_REFUSE_NO_SLOT, "pid %d (%s) holds %d process slots of vGPU %s, the most one process "
                      "may (a process that loads vgpu twice holds 2)", (int)c->pid, c->comm, MED_SLOTS_PER_PID,
                      v->conf.name);
    if (slot < 0)
        return refuse(c, VGPU_REFUSE_NO_SLOT, "vGPU %s has %d processes already, its most", v->conf.name,
                      VGPU_BAR0_MAX_PROCS);
    struct vgpu_msg_entered e = { .slot = (uint32_t)slot };
    return send_or_drop(c, VGPU_MSG_ENTERED, &e, sizeof(e), NULL, 0);
}

/* Sends a built answer (NULL: out of memory, the connection is dropped). */
static bool send_built(struct med_client *c, uint16_t type, uint8_t *payload, uint32_t len)
{
    if (!payload)
        return false;
    bool ok = send_or_drop(c, type, payload, len, NULL, 0);
    free(payload);
    return ok;
}

static bool handle(struct med_client *c, struct med_world *w, const struct vgpu_msg *m, uint64_t now_ms)
{
    uint8_t *payload;
    uint32_t len = 0;
    switch (m->type) {
    case VGPU_MSG_HELLO:
        if (c->vgpu)
            return refuse(c, VGPU_REFUSE_BAD_REQUEST, "HELLO on a connection already admitted");
        return m->u.hello.flags & VGPU_HELLO_REATTACH ? reattach(c, w, &m->u.hello) : hello(c, w, &m->u.hello);
    case VGPU_MSG_REMOTE:
        if (c->vgpu)
            return refuse(c, VGPU_REFUSE_BAD_REQUEST, "REMOTE on a connection already admitted");
        return remote(c, w, &m->u.hello);
    case VGPU_MSG_ENTER:
        if (!c->vgpu || c->adm->slot >= 0)
            return refuse(c, VGPU_REFUSE_BAD_REQUEST, "ENTER %s", c->vgpu ? "twice" : "before HELLO");
        return enter(c);
    case VGPU_MSG_STATUS_REQUEST:
        payload = med_status_build(w, c->uid, c->gid, c->groups, c->ngroups, &len);
        return send_built(c, VGPU_MSG_STATUS, payload, len);
    case VGPU_MSG_WATCH_REQUEST:
        payload = med_watch_build(w->watch, w, c->uid, c->gid, c->groups, c->ngroups, now_ms, &len);
        return send_built(c, VGPU_MSG_WATCH, payload, len);
    case VGPU_MSG_COMPUTE_REQUEST:
        payload = med_compute_build(w, c->uid, c->gid, c->groups, c->ngroups, &len);
        return send_built(c, VGPU_MSG_COMPUTE, payload, len);
    case VGPU_MSG_BIND:
        if (c->vgpu)
            return refuse(c, VGPU_REFUSE_BAD_REQUEST, "BIND on a connection admitted to a vGPU");
        return bind_vgpu(c, w, &m->u.bind);
    case VGPU_MSG_PIN:
        return pin(c, w, &m->u.pin);
    case VGPU_MSG_CLUSTER_REQUEST:
        payload = med_cluster_build(w, c->uid, c->gid, c->groups, c->ngroups, &len);
        return send_built(c, VGPU_MSG_CLUSTER, payload, len);
    default:
        return refuse(c, VGPU_REFUSE_BAD_REQUEST, "message type %u is not a request", m->type);
    }
}

/* Answers the requests read so far, until an answer has to wait. */
static bool answer(struct med_client *c, struct med_world *w, uint64_t now_ms)
{
    while (!med_client_waiting(c)) {
        struct vgpu_msg m;
        char why[256];
        ssize_t used = vgpu_proto_parse(c->in, c->have, VGPU_PROTO_MAX_REQUEST, &m, why, sizeof(why));
        if (used == 0)
            return true;
        if (used < 0) /* said in version 1's terms, which every client reads */
            return refuse(c, VGPU_REFUSE_BAD_REQUEST, "malformed message: %s", why);
        c->last_ms = now_ms;
        if (!handle(c, w, &m, now_ms))
            return false;
        memmove(c->in, c->in + used, c->have - (size_t)used);
        c->have -= (size_t)used;
    }
    return true;
}

bool med_client_readable(struct med_client *c, struct med_world *w, uint64_t now_ms)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * 8)];
    } control;
    struct iovec iov = { c->in + c->have, sizeof(c->in) - c->have };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                         .msg_controllen = sizeof(control.buf) };
    if (med_client_waiting(c))
        return true; /* not read until its answers are taken */
    ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    /* Clients send no descriptors: close any, never keep them. */
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
            for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
                close(fd);
            }
    if (n <= 0)
        return false;
    c->have += (size_t)n;
    return answer(c, w, now_ms);
}

bool med_client_writable(struct med_client *c, struct med_world *w, uint64_t now_ms)
{
    int r = med_sendq_flush(&c->out, c->fd);
    if (r < 0)
        return false;
    return r > 0 || answer(c, w, now_ms);
}

void med_client_close(struct med_client *c)
{
    if (c->adm) {
        char who[64];
        snprintf(who, sizeof(who), "pid %d (%s)", (int)c->pid, c->comm);
        med_vgpu_leave(c->vgpu, c->adm, who);
    }
    med_sendq_clear(&c->out);
    close(c->fd);
    free(c->groups);
    free(c);
}
