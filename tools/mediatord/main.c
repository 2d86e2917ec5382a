/*
 * vgpu-mediatord: owns the GPUs, creates each vGPU's BAR0, admits processes
 * over a Unix socket by their credentials, returns what a process held the
 * moment its connection closes, and serves vgpu-smi and Prometheus.
 * docs/guide/mediator.md is its manual.
 *
 * One thread, one epoll loop: the listening socket, every connection, the
 * metrics socket and its scrapes, and a signalfd (SIGHUP reloads the config,
 * SIGTERM/SIGINT stop).  Nothing in it blocks: sockets are non-blocking,
 * answers a slow reader has not taken wait in its queue, and a wakeup
 * accepts a bounded number of connections.  The watch's and the compute
 * views' readings of the driver come from threads of their own
 * (watch_sampler.h), which the loop hears through descriptors like any
 * other.  A tick every second returns
 * the memory of processes that died holding no connection (after a
 * restart, until they reattach) and closes connections that sit idle
 * without being admitted, or do not take their answers.
 */
#define _GNU_SOURCE
#include "common/log.h"
#include "tools/mediatord/clients/clients.h"
#include "tools/mediatord/clients/metrics.h"
#include "tools/mediatord/compute/sched.h"
#include "tools/mediatord/compute/utilization.h"
#include "tools/mediatord/config/config.h"
#include "tools/mediatord/config/state_dir.h"
#include "tools/mediatord/daemon.h"
#include "tools/mediatord/gpus.h"
#include "tools/mediatord/health/xid.h"
#include "tools/mediatord/ratelimit.h"
#include "tools/mediatord/remote/executors.h"
#include "tools/mediatord/vgpus/vgpus.h"
#include "tools/mediatord/vgpus/window_guard.h"
#include "tools/mediatord/watch/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_CONFIG "/etc/vgpu/mediatord.conf"
/* A connection that is not admitted and asks nothing this long is closed. */
#define IDLE_MS 30000
/* Connections accepted in one wakeup, at most: signals and clients wait no longer. */
#define ACCEPTS_PER_WAKEUP 64
/* Out of descriptors with none to spare: how long the socket is left unwatched. */
#define LISTEN_PAUSE_MS 100
/* Descriptors kept for what is not a connection (vGPU windows, scrapes,
 * journals, the log) when max_connections follows the descriptor limit. */
#define RESERVED_FDS 512

enum source_kind { SRC_LISTEN, SRC_SIGNAL, SRC_METRICS, SRC_CLIENT, SRC_HTTP, SRC_WATCH, SRC_SCHED, SRC_VIEWS };

/* What an epoll event is about. */
struct source {
    enum source_kind kind;
    void *obj;       /* struct med_client or struct med_http */
    uint32_t events; /* what it is watched for */
};

/* The daemon's state: written only by the loop's thread. */
static struct med_config configs[2];
static int current; /* configs[current] is in force */
static struct med_gpus gpus;
static struct med_vgpus vgpus;
static struct med_sched sched; /* the compute share's arbitration of each GPU (sched.h) */
static struct med_world world;
static struct med_executors executors; /* the world's: the executors started (remote/executors.h) */
static struct med_watch watcher;
static struct med_views views; /* the compute share's views (utilization.h) */
static int epfd = -1;
static int spare_fd = -1; /* given up to accept-and-refuse one connection when out of descriptors */
static uint64_t listen_resume_ms; /* the listening socket is unwatched until then (0: watched) */
static struct med_ratelimit fd_log, accept_log;
static struct source *scrapes[MED_HTTP_MAX];
static int nscrapes;
static struct source listen_src = { SRC_LISTEN, NULL, EPOLLIN }, signal_src = { SRC_SIGNAL, NULL, EPOLLIN },
                     metrics_src = { SRC_METRICS, NULL, EPOLLIN }, watch_src = { SRC_WATCH, NULL, EPOLLIN },
                     sched_src = { SRC_SCHED, NULL, EPOLLIN }, views_src = { SRC_VIEWS, NULL, EPOLLIN };

static void usage(FILE *to)
{
    fprintf(to, "usage: vgpu-mediatord [--config FILE] [--foreground] [--check-config] [--metrics HOST:PORT]\n"
                "\n"
                "  --config FILE        the configuration (default %s)\n"
                "  --foreground         stay in the foreground, logging to stderr (as under systemd)\n"
                "  --check-config       check the configuration against this machine's GPUs, then exit\n"
                "  --metrics HOST:PORT  serve Prometheus metrics at http://HOST:PORT/metrics\n"
                "  --version, --help\n"
                "\n"
                "Without --foreground it returns once it serves (or 1, having said why it cannot).\n"
                "SIGHUP reloads the configuration.  docs/guide/mediator.md describes it all.\n",
            DEFAULT_CONFIG);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int watch(int fd, struct source *src)
{
    struct epoll_event ev = { .events = src->events, .data.ptr = src };
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Watches fd for events from now on. */
static void rewatch(int fd, struct source *src, uint32_t events)
{
    if (src->events == events)
        return;
    struct epoll_event ev = { .events = events, .data.ptr = src };
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
        src->events = events;
}

/* Every connection costs a descriptor for the life of a CUDA process.
 * Returns the limit in force. */
static int raise_fd_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return 1024;
    if (r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
        getrlimit(RLIMIT_NOFILE, &r);
    }
    return r.rlim_cur > (1u << 30) ? 1 << 30 : (int)r.rlim_cur;
}

/* The cap on connections in force: the config's, or what the descriptor
 * limit leaves room for. */
static int connection_cap(const struct med_config *c, int fd_limit)
{
    int room = fd_limit > 2 * RESERVED_FDS ? fd_limit - RESERVED_FDS : fd_limit / 2;
    if (!c->max_connections)
        return room;
    if (c->max_connections > room)
        vgpu_warn("max_connections = %d, but the descriptor limit (%d) leaves room for about %d: connections past "
                  "that are refused for want of descriptors; raise the limit (LimitNOFILE= under systemd)",
                  c->max_connections, fd_limit, room);
    return c->max_connections;
}

/* ---- the socket ---- */

static int listen_socket(const struct med_config *c, char *err, size_t errlen)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->socket);
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        close(probe);
        snprintf(err, errlen, "another vgpu-mediatord serves %s", c->socket);
        return -1;
    }
    if (probe >= 0)
        close(probe);
    char dir[sizeof(sa.sun_path)];
    snprintf(dir, sizeof(dir), "%s", c->socket);
    if (mkdir(dirname(dir), 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create the socket's directory for %s: %s", c->socket, strerror(errno));
        return -1;
    }
    unlink(c->socket); /* a stopped mediator's: nobody answered on it */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    mode_t old = umask(0177); /* born private; opened up by chmod below */
    int r = fd >= 0 ? bind(fd, (struct sockaddr *)&sa, sizeof(sa)) : -1;
    umask(old);
    if (r != 0 || chmod(c->socket, c->socket_mode) != 0 ||
        ((c->socket_uid != (uid_t)-1 || c->socket_gid != (gid_t)-1) &&
         chown(c->socket, c->socket_uid, c->socket_gid) != 0) ||
        listen(fd, 128) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", c->socket, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* ---- connections ---- */

static void add_client(int fd, uint64_t now)
{
    struct med_client *c = med_client_accept(fd, &world, now);
    struct source *src = c ? malloc(sizeof(*src)) : NULL;
    struct med_client **grown = src ? realloc(world.clients, sizeof(*grown) * (size_t)(world.nclients + 1)) : NULL;
    if (!grown) {
        free(src);
        if (c)
            med_client_close(c);
        else
            close(fd);
        return;
    }
    world.clients = grown;
    world.clients[world.nclients++] = c;
    *src = (struct source){ SRC_CLIENT, c, EPOLLIN };
    c->loop = src;
    if (watch(fd, src) != 0) {
        world.nclients--;
        med_client_close(c);
        free(src);
    }
}

static void drop_client(struct source *src)
{
    struct med_client *c = src->obj;
    for (int i = 0; i < world.nclients; i++)
        if (world.clients[i] == c) {
            world.clients[i] = world.clients[--world.nclients];
            break;
        }
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    med_client_close(c);
    free(src);
}

/* A connection's event: answers that wait are sent first; while any
 * still waits, it is watched for room to write, not for requests. */
static void client_event(struct source *src, uint32_t events, uint64_t now)
{
    struct med_client *c = src->obj;
    bool ok = true;
    if (med_client_waiting(c))
        ok = med_client_writable(c, &world, now);
    if (ok && !med_client_waiting(c) && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        ok = med_client_readable(c, &world, now);
    if (!ok)
        drop_client(src);
    else
        rewatch(c->fd, src, med_client_waiting(c) ? EPOLLOUT : EPOLLIN);
}

static void add_scrape(int fd, uint64_t now)
{
    struct med_http *h = nscrapes < MED_HTTP_MAX ? med_http_accept(fd, now) : NULL;
    struct source *src = h ? malloc(sizeof(*src)) : NULL;
    if (src) {
        *src = (struct source){ SRC_HTTP, h, EPOLLIN };
        if (watch(fd, src) == 0) {
            scrapes[nscrapes++] = src;
            return;
        }
    }
    free(src);
    if (h)
        med_http_close(h);
    else
        close(fd);
}

static void drop_scrape(struct source *src)
{
    for (int i = 0; i < nscrapes; i++)
        if (scrapes[i] == src) {
            scrapes[i] = scrapes[--nscrapes];
            break;
        }
    epoll_ctl(epfd, EPOLL_CTL_DEL, med_http_fd(src->obj), NULL);
    med_http_close(src->obj);
    free(src);
}

/* Out of descriptors: the pending connection would wake the loop for
 * ever.  The spare descriptor is given up, and the connections waiting
 * (up to a wake-up's worth) are taken, told why, and closed; with none to
 * spare, the socket is left alone a moment.  Said once a second, with how
 * many were refused since. */
static void out_of_descriptors(int lfd, struct source *src, bool http, uint64_t now)
{
    static unsigned long refused_since_line; /* the loop's; reset by each line */
    int refused = 0;
    if (spare_fd >= 0) {
        close(spare_fd);
        char reason[VGPU_REASON_LEN];
        snprintf(reason, sizeof(reason), "vgpu-mediatord is out of file descriptors (%d connections, limit %d): "
                 "the operator raises its limit (LimitNOFILE= under systemd) or lowers max_connections",
                 world.nclients, world.fd_limit);
        while (refused < ACCEPTS_PER_WAKEUP) {
            int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED)
                    continue;
                break;
            }
            if (!http)
                med_client_refuse_fd(fd, VGPU_REFUSE_UNAVAILABLE, reason);
            close(fd);
            refused++;
        }
        spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    if (!refused || spare_fd < 0) {
        rewatch(lfd, src, 0);
        listen_resume_ms = now + LISTEN_PAUSE_MS;
    }
    refused_since_line += (unsigned long)refused;
    unsigned long wakeups;
    if (med_ratelimit_allow(&fd_log, now, &wakeups)) {
        vgpu_warn("out of file descriptors (%d connections, limit %d): refusing new connections (%lu refused in "
                  "the last second); raise the limit (LimitNOFILE= under systemd) or lower max_connections",
                  world.nclients, world.fd_limit, refused_since_line);
        refused_since_line = 0;
    }
}

/* Clients' sockets are non-blocking (sendq.h); a scrape's stays blocking,
 * its page sent whole within its send timeout (metrics.c). */
static void accept_some(int lfd, struct source *src, bool http, uint64_t now)
{
    for (int i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | (http ? 0 : SOCK_NONBLOCK));
        if (fd >= 0) {
            if (http)
                add_scrape(fd, now);
            else
                add_client(fd, now);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EMFILE || errno == ENFILE) {
            out_of_descriptors(lfd, src, http, now);
            return;
        }
        unsigned long held;
        if (errno != EAGAIN && med_ratelimit_allow(&accept_log, now, &held))
            vgpu_warn("accept: %s (%lu more in the last second)", strerror(errno), held);
        return;
    }
}

/* Connections that were never admitted and sit idle (but an executor's
 * own, which lasts as long as it does: its record bounds it), ones that do
 * not take their answers, and slow scrapes. */
static void expire(uint64_t now)
{
    for (int i = 0; i < world.nclients; i++) {
        struct med_client *c = world.clients[i];
        const char *why = !c->vgpu && !c->executor && now - c->last_ms > IDLE_MS ? "the idle connection"
                          : med_client_waiting(c) && now - c->out.since_ms > MED_STALL_MS
                              ? "the connection that does not read its answers"
                              : NULL;
        if (why) {
            vgpu_info("closed %s of pid %d (%s)", why, (int)c->pid, c->comm);
            drop_client(c->loop); /* moves the last client into i */
            i--;
        }
    }
    for (int i = 0; i < nscrapes; i++)
        if (med_http_expired(scrapes[i]->obj, now))
            drop_scrape(scrapes[i--]);
}

/* ---- signals ---- */

/* A new config, as a whole or not at all; what changes on restart only
 * stays as it is. */
static void reload(void)
{
    struct med_config *next = &configs[!current];
    const struct med_config *now = &configs[current];
    char err[1024];
    if (med_config_load(now->path, next, err, sizeof(err)) != 0 || med_gpus_check(&gpus, next, err, sizeof(err)) != 0 ||
        med_vgpus_check_reload(&vgpus, next, &gpus, err, sizeof(err)) != 0) {
        vgpu_error("reload refused, the running configuration stays: %s", err);
        return;
    }
    if (strcmp(next->socket, now->socket) || strcmp(next->state_dir, now->state_dir) ||
        strcmp(next->metrics, now->metrics) || next->socket_mode != now->socket_mode ||
        next->socket_uid != now->socket_uid || next->socket_gid != now->socket_gid)
        vgpu_warn("socket, socket_mode, socket_owner, socket_group, state_dir and metrics change when "
                  "vgpu-mediatord restarts, not on reload; the running ones stay");
    memcpy(next->socket, now->socket, sizeof(next->socket));
    memcpy(next->state_dir, now->state_dir, sizeof(next->state_dir));
    memcpy(next->metrics, now->metrics, sizeof(next->metrics));
    next->socket_mode = now->socket_mode;
    next->socket_uid = now->socket_uid;
    next->socket_gid = now->socket_gid;
    int failed = med_vgpus_reload(&vgpus, next, &gpus);
    med_sched_sync(&sched, &vgpus, &gpus);
    current = !current;
    world.config = &configs[current];
    world.max_connections = connection_cap(world.config, world.fd_limit);
    med_watch_configure(&watcher, &world);
    med_views_configure(&views, &world);
    if (failed)
        vgpu_error("reloaded %s: %d vGPU(s), %d of them could not be made (above)", next->path, next->nvgpus, failed);
    else
        vgpu_info("reloaded %s: %d vGPU(s)", next->path, next->nvgpus);
}

/* True to go on; false to stop. */
static bool signalled(int sfd)
{
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGHUP) {
            med_notify_systemd("RELOADING=1");
            reload();
            med_notify_systemd("READY=1");
        } else {
            vgpu_info("stopping on signal %u; processes keep their vGPUs and reattach when it is back, and new "
                      "ones are refused until then", si.ssi_signo);
            return false;
        }
    }
    return true;
}

/* The signals the loop reads from its signalfd.  Blocked in main before
 * anything can start a thread: NVML starts one of its own
 * when the GPUs are looked up, with its creator's mask, and a thread that
 * does not block them takes them instead of the signalfd (a reload lost,
 * or a SIGHUP's default action ending the daemon; seen on the H100). */
static void loop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
}

static void block_loop_signals(void)
{
    sigset_t set;
    loop_signals(&set);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static int make_signalfd(void)
{
    sigset_t set;
    loop_signals(&set);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* ---- running ---- */

/* state_dir/vgpu-mediatord.log, for a mediator in the background with no
 * VGPU_LOG_FILE: the descriptor, or -1 (said why). */
static int open_log(void)
{
    const char *file = getenv("VGPU_LOG_FILE");
    if (file && *file)
        return -1;
    char err[1024];
    int flags = O_WRONLY | O_APPEND;
    int fd = med_state_open(vgpus.dir, vgpus.dir_path, "vgpu-mediatord.log", flags, MED_STATE_PRIVATE, err,
                            sizeof(err));
    if (fd == -ENOENT)
        fd = med_state_open(vgpus.dir, vgpus.dir_path, "vgpu-mediatord.log", flags | O_CREAT, MED_STATE_PRIVATE, err,
                            sizeof(err));
    if (fd < 0)
        vgpu_warn("no log file: %s", err);
    return fd;
}

static int serve(int lfd, int sfd, int mfd)
{
    uint64_t last_tick = now_ms();
    for (;;) {
        struct epoll_event ev[64];
        uint64_t before = now_ms();
        int timeout = 1000;
        if (listen_resume_ms)
            timeout = listen_resume_ms > before ? (int)(listen_resume_ms - before) : 0;
        int n = epoll_wait(epfd, ev, 64, timeout);
        if (n < 0 && errno != EINTR) {
            vgpu_error("epoll_wait: %s", strerror(errno));
            return 1;
        }
        uint64_t now = now_ms();
        for (int i = 0; i < n; i++) {
            struct source *src = ev[i].data.ptr;
            switch (src->kind) {
            case SRC_LISTEN:
                accept_some(lfd, src, false, now);
                break;
            case SRC_METRICS:
                accept_some(mfd, src, true, now);
                break;
            case SRC_SIGNAL:
                if (!signalled(sfd))
                    return 0;
                break;
            case SRC_CLIENT:
                client_event(src, ev[i].events, now);
                break;
            case SRC_HTTP:
                if (!med_http_readable(src->obj, &world))
                    drop_scrape(src);
                break;
            case SRC_WATCH:
                med_watch_readable(&watcher, &world, now);
                break;
            case SRC_SCHED:
                med_sched_tick(&sched);
                break;
            case SRC_VIEWS:
                med_views_readable(&views, &world);
                break;
            }
        }
        if (listen_resume_ms && now >= listen_resume_ms) {
            listen_resume_ms = 0;
            rewatch(lfd, &listen_src, EPOLLIN);
            if (mfd >= 0)
                rewatch(mfd, &metrics_src, EPOLLIN);
        }
        if (now - last_tick >= 1000) {
            med_vgpus_scan(&vgpus);
            med_sched_sync(&sched, &vgpus, &gpus);
            expire(now);
            last_tick = now;
        }
        med_vgpus_flush(&vgpus);
    }
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "config", required_argument, NULL, 'c' }, { "foreground", no_argument, NULL, 'f' },
        { "check-config", no_argument, NULL, 'k' }, { "metrics", required_argument, NULL, 'm' },
        { "version", no_argument, NULL, 'V' },      { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *path = DEFAULT_CONFIG, *metrics = NULL;
    bool foreground = false, check_only = false;
    int opt;
    vgpu_log_set_program("vgpu-mediatord");
    while ((opt = getopt_long(argc, argv, "c:fkm:Vh", options, NULL)) != -1) {
        switch (opt) {
        case 'c': path = optarg; break;
        case 'f': foreground = true; break;
        case 'k': check_only = true; break;
        case 'm': metrics = optarg; break;
        case 'V': puts("vgpu-mediatord " VGPU_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    char err[1024];
    struct med_config *c = &configs[0];
    if (med_config_load(path, c, err, sizeof(err)) != 0) {
        fprintf(stderr, "vgpu-mediatord: %s\n", err);
        return 1;
    }
    /* Before anything is made that the loop waits on (daemon.h). */
    if (!check_only && !foreground)
        med_daemon_fork();
    /* Before anything starts a thread (NVML, finding the GPUs, does): the
     * starting process of a daemon keeps its own, Ctrl-C included. */
    block_loop_signals();
    if (med_gpus_discover(&gpus, err, sizeof(err)) != 0 || med_gpus_check(&gpus, c, err, sizeof(err)) != 0) {
        fprintf(stderr, "vgpu-mediatord: %s\n", err);
        return 1;
    }
    if (check_only) {
        printf("%s: ok, %d vGPU(s) on %d GPU(s)\n", path, c->nvgpus, gpus.n);
        return 0;
    }
    if (metrics)
        snprintf(c->metrics, sizeof(c->metrics), "%s", metrics);

    world.fd_limit = raise_fd_limit();
    spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    int sfd = make_signalfd(), mfd = -1, lfd;
    /* Before any VM's window is mapped: one its VM's group truncates must not end the mediator. */
    if (epfd < 0 || sfd < 0 || med_sched_init(&sched) != 0 || med_window_guard_install() != 0) {
        vgpu_error("cannot set up the event loop: %s", strerror(errno));
        return 1;
    }
    char where[160] = "";
    if (med_vgpus_open(&vgpus, c, &gpus, err, sizeof(err)) != 0 ||
        (lfd = listen_socket(c, err, sizeof(err))) < 0 ||
        (c->metrics[0] && (mfd = med_metrics_listen(c->metrics, where, sizeof(where), err, sizeof(err))) < 0) ||
        med_watch_start(&watcher, &gpus, err, sizeof(err)) != 0 ||
        med_views_start(&views, &gpus, &sched, err, sizeof(err)) != 0) {
        vgpu_error("%s", err);
        return 1;
    }
    world.config = c;
    world.vgpus = &vgpus;
    world.executors = &executors;
    world.watch = &watcher;
    world.views = &views;
    world.health = med_health_start(&gpus);
    world.max_connections = connection_cap(c, world.fd_limit);
    watch(lfd, &listen_src);
    watch(sfd, &signal_src);
    watch(med_watch_fd(&watcher), &watch_src);
    watch(med_views_fd(&views), &views_src);
    if (mfd >= 0)
        watch(mfd, &metrics_src);
    /* Listening: running processes may now reattach. */
    med_vgpus_announce(&vgpus);
    med_vgpus_scan(&vgpus);
    med_sched_sync(&sched, &vgpus, &gpus);
    watch(sched.timer, &sched_src);
    if (!foreground)
        med_daemon_ready(open_log());
    vgpu_info("vgpu-mediatord %s serving %d vGPU(s) on %s (start %u)%s%s", VGPU_VERSION, c->nvgpus, c->socket,
              vgpus.epoch, mfd >= 0 ? ", metrics on " : "", where);
    med_watch_configure(&watcher, &world);
    med_views_configure(&views, &world);
    med_notify_systemd("READY=1");
    int rc = serve(lfd, sfd, mfd);
    med_notify_systemd("STOPPING=1");
    /* The socket stays: a process that starts before the mediator is back
     * finds it, but no answer, and is refused rather than run unlimited. */
    close(lfd);
    return rc;
}
