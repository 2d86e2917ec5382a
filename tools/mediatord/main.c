/*
 * vgpu-mediatord: owns the GPUs, creates each vGPU's BAR0, admits processes
 * over a Unix socket by their credentials, returns what a process held the
 * moment its connection closes, and serves vgpu-smi and Prometheus.
 * docs/mediator.md is its manual.
 *
 * One thread, one epoll loop: the listening socket, every connection, the
 * metrics socket and its scrapes, and a signalfd (SIGHUP reloads the config,
 * SIGTERM/SIGINT stop).  A tick every second returns the memory of
 * processes that died holding no connection (after a restart, until they
 * reattach) and closes connections that sit idle without being admitted.
 */
#define _GNU_SOURCE
#include "common/log.h"
#include "tools/mediatord/clients.h"
#include "tools/mediatord/config.h"
#include "tools/mediatord/gpus.h"
#include "tools/mediatord/metrics.h"
#include "tools/mediatord/vgpus.h"

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

#ifndef VGPU_VERSION
#error "build with -DVGPU_VERSION=\"...\" (meson does)"
#endif

#define DEFAULT_CONFIG "/etc/vgpu/mediatord.conf"
/* A connection that is not admitted and asks nothing this long is closed. */
#define IDLE_MS 30000

enum source_kind { SRC_LISTEN, SRC_SIGNAL, SRC_METRICS, SRC_CLIENT, SRC_HTTP };

/* What an epoll event is about. */
struct source {
    enum source_kind kind;
    void *obj; /* struct med_client or struct med_http */
};

/* The daemon's state: written only by the loop's thread. */
static struct med_config configs[2];
static int current; /* configs[current] is in force */
static struct med_gpus gpus;
static struct med_vgpus vgpus;
static struct med_world world;
static int epfd = -1;
static int spare_fd = -1; /* given up to accept-and-close one connection when out of descriptors */
static struct source *scrapes[MED_HTTP_MAX];
static int nscrapes;
static struct source listen_src = { SRC_LISTEN, NULL }, signal_src = { SRC_SIGNAL, NULL },
                     metrics_src = { SRC_METRICS, NULL };

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
                "SIGHUP reloads the configuration.  docs/mediator.md describes it all.\n",
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
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = src };
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* systemd's readiness protocol (Type=notify), without libsystemd: one
 * datagram to $NOTIFY_SOCKET.  Tenant services ordered after the mediator
 * then start only once its socket answers. */
static void notify_systemd(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
        return;
    strcpy(sa.sun_path, path);
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0'; /* an abstract socket */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) < 0)
        vgpu_warn("cannot tell systemd %s: %s", state, strerror(errno));
    close(fd);
}

/* Every connection costs a descriptor for the life of a CUDA process. */
static void raise_fd_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
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
    struct med_client *c = med_client_accept(fd, now);
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
    *src = (struct source){ SRC_CLIENT, c };
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

static void add_scrape(int fd, uint64_t now)
{
    struct med_http *h = nscrapes < MED_HTTP_MAX ? med_http_accept(fd, now) : NULL;
    struct source *src = h ? malloc(sizeof(*src)) : NULL;
    if (src) {
        *src = (struct source){ SRC_HTTP, h };
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

/* Accepted sockets stay blocking: answers wait for a slow reader up to
 * their send timeout, and reads never block (MSG_DONTWAIT). */
static void accept_all(int lfd, bool http)
{
    uint64_t now = now_ms();
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) {
            if (http)
                add_scrape(fd, now);
            else
                add_client(fd, now);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if ((errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
            /* Out of descriptors: the pending connection would wake the
             * loop forever.  Take it with the spare and close it. */
            vgpu_warn("out of file descriptors (%d connections): refusing one", world.nclients);
            close(spare_fd);
            int drop = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            if (drop >= 0)
                close(drop);
            spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            continue;
        }
        if (errno != EAGAIN)
            vgpu_warn("accept: %s", strerror(errno));
        return;
    }
}

/* Connections that were never admitted and sit idle, and slow scrapes. */
static void expire(uint64_t now)
{
    for (int i = 0; i < world.nclients; i++) {
        struct med_client *c = world.clients[i];
        if (!c->vgpu && now - c->last_ms > IDLE_MS) {
            vgpu_info("closed the idle connection of pid %d (%s)", (int)c->pid, c->comm);
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
    current = !current;
    world.config = &configs[current];
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
            notify_systemd("RELOADING=1");
            reload();
            notify_systemd("READY=1");
        } else {
            vgpu_info("stopping on signal %u; processes keep their vGPUs and reattach when it is back, and new "
                      "ones are refused until then", si.ssi_signo);
            return false;
        }
    }
    return true;
}

static int make_signalfd(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* ---- running ---- */

static void daemonize(const char *state_dir)
{
    pid_t pid = fork();
    if (pid < 0) {
        vgpu_error("cannot fork into the background: %s", strerror(errno));
        exit(1);
    }
    if (pid > 0)
        _exit(0);
    setsid();
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    const char *file = getenv("VGPU_LOG_FILE");
    if (!file || !*file) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/vgpu-mediatord.log", state_dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (fd >= 0)
            vgpu_log_set_fd(fd);
    }
    if (null >= 0)
        dup2(null, 2);
}

static int serve(int lfd, int sfd, int mfd)
{
    uint64_t last_tick = now_ms();
    for (;;) {
        struct epoll_event ev[64];
        int n = epoll_wait(epfd, ev, 64, 1000);
        if (n < 0 && errno != EINTR) {
            vgpu_error("epoll_wait: %s", strerror(errno));
            return 1;
        }
        for (int i = 0; i < n; i++) {
            struct source *src = ev[i].data.ptr;
            switch (src->kind) {
            case SRC_LISTEN:
                accept_all(lfd, false);
                break;
            case SRC_METRICS:
                accept_all(mfd, true);
                break;
            case SRC_SIGNAL:
                if (!signalled(sfd))
                    return 0;
                break;
            case SRC_CLIENT:
                if (!med_client_readable(src->obj, &world, now_ms()))
                    drop_client(src);
                break;
            case SRC_HTTP:
                if (!med_http_readable(src->obj, &world))
                    drop_scrape(src);
                break;
            }
        }
        uint64_t now = now_ms();
        if (now - last_tick >= 1000) {
            med_vgpus_scan(&vgpus);
            expire(now);
            last_tick = now;
        }
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

    raise_fd_limit();
    spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    int sfd = make_signalfd(), mfd = -1, lfd;
    if (epfd < 0 || sfd < 0) {
        vgpu_error("cannot set up the event loop: %s", strerror(errno));
        return 1;
    }
    char where[160] = "";
    if (med_vgpus_open(&vgpus, c, &gpus, err, sizeof(err)) != 0 ||
        (lfd = listen_socket(c, err, sizeof(err))) < 0 ||
        (c->metrics[0] && (mfd = med_metrics_listen(c->metrics, where, sizeof(where), err, sizeof(err))) < 0)) {
        vgpu_error("%s", err);
        return 1;
    }
    world = (struct med_world){ .config = c, .vgpus = &vgpus };
    watch(lfd, &listen_src);
    watch(sfd, &signal_src);
    if (mfd >= 0)
        watch(mfd, &metrics_src);
    if (!foreground)
        daemonize(c->state_dir);
    /* Listening: running processes may now reattach. */
    med_vgpus_announce(&vgpus);
    med_vgpus_scan(&vgpus);
    vgpu_info("vgpu-mediatord %s serving %d vGPU(s) on %s (start %u)%s%s", VGPU_VERSION, c->nvgpus, c->socket,
              vgpus.epoch, mfd >= 0 ? ", metrics on " : "", where);
    notify_systemd("READY=1");
    int rc = serve(lfd, sfd, mfd);
    notify_systemd("STOPPING=1");
    /* The socket stays: a process that starts before the mediator is back
     * finds it, but no answer, and is refused rather than run unlimited. */
    close(lfd);
    return rc;
}
