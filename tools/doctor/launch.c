/* Running a command to inspect it; see launch.h. */
#define _GNU_SOURCE
#include "tools/doctor/launch.h"

#include "common/error.h"
#include "tools/doctor/proc.h"
#include "tools/lib/json_out.h"
#include "common/contract/window/status_page.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_US 5000
#define MAX_TREE 512
#define MAX_LOG_LINES 20
/* How long a joined process may take to load the driver behind vgpu before it is inspected anyway. */
#define DRIVER_GRACE_S 1.0

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The command being run, for the signal handler: set once it has started,
 * by doc_run_start (the doctor runs one command). */
static const struct doc_run *running;

/* Interrupted: the command, in its own process group, would outlive the doctor. */
static void stop_and_exit(int sig)
{
    if (running) {
        kill(-running->pid, SIGKILL);
        unlink(running->log);
        unlink(running->out);
        rmdir(running->dir);
    }
    _exit(128 + sig);
}

int doc_run_start(struct doc_run *r, char **argv, const struct vgpu_libs *preload, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    const char *tmp = getenv("TMPDIR");
    snprintf(r->dir, sizeof(r->dir), "%s/vgpu-doctor.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(r->dir)) {
        r->dir[0] = '\0';
        return vgpu_fail(err, errlen, "cannot make a temporary directory: %s", strerror(errno));
    }
    snprintf(r->log, sizeof(r->log), "%s/vgpu.log", r->dir);
    snprintf(r->out, sizeof(r->out), "%s/output", r->dir);
    char *list = NULL;
    if (preload && !(list = vgpu_preload_list(preload, getenv("LD_PRELOAD"))))
        return vgpu_fail(err, errlen, "out of memory");
    int out = open(r->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) {
        free(list);
        return vgpu_fail(err, errlen, "%s: %s", r->out, strerror(errno));
    }
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0) {
        close(out);
        free(list);
        return vgpu_fail(err, errlen, "pipe: %s", strerror(errno));
    }
    r->started = now();
    r->pid = fork();
    if (r->pid == 0) {
        close(ready[0]);
        setpgid(0, 0);
        /* Its own process group, so stopping it stops its children; reading a
         * terminal from there would stop it, so it reads nothing. */
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null >= 0)
            dup2(null, 0);
        dup2(out, 1);
        dup2(out, 2);
        setenv("VGPU_LOG", "info", 1);
        setenv("VGPU_LOG_FILE", r->log, 1);
        if (list)
            setenv("LD_PRELOAD", list, 1);
        execvp(argv[0], argv);
        int e = errno;
        ssize_t w = write(ready[1], &e, sizeof(e));
        (void)w;
        _exit(127);
    }
    int e = r->pid < 0 ? errno : 0;
    close(out);
    close(ready[1]);
    free(list);
    if (r->pid < 0) {
        close(ready[0]);
        return vgpu_fail(err, errlen, "fork: %s", strerror(e));
    }
    /* The pipe closes at exec; an errno on it says exec failed. */
    ssize_t n;
    while ((n = read(ready[0], &e, sizeof(e))) < 0 && errno == EINTR) {
    }
    close(ready[0]);
    if (n == (ssize_t)sizeof(e)) {
        waitpid(r->pid, NULL, 0);
        r->pid = 0;
        return vgpu_fail(err, errlen, "%s: %s", argv[0], e == ENOENT ? "command not found" : strerror(e));
    }
    running = r;
    struct sigaction sa = { .sa_handler = stop_and_exit };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    return 0;
}

/* The process's status record: 0 none, 1 there, 2 there and "mode on". */
static int has_record(pid_t pid)
{
    static const struct doc_fs real = { "" }; /* the command runs on this machine, whatever --root says */
    char text[VGPU_STATUS_PAGE_MAX];
    if (doc_proc_record(&real, (int)pid, text, sizeof(text)) < 0)
        return 0;
    return strstr(text, "\nmode on\n") ? 2 : 1;
}

/* A driver's libcuda is mapped (by name: vgpu's own files are libvgpu-*). */
static bool driver_mapped(pid_t pid)
{
    char path[64], line[4096];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    bool found = false;
    while (f && !found && fgets(line, sizeof(line), f)) {
        const char *base = strrchr(line, '/');
        found = base && strncmp(base + 1, "libcuda.so", 10) == 0;
    }
    if (f)
        fclose(f);
    return found;
}

/* pid and its descendants, breadth first, from /proc/PID/task/TID/children. */
static int tree(pid_t root, pid_t *out, int max)
{
    int n = 0;
    out[n++] = root;
    for (int i = 0; i < n; i++) {
        char dir[64];
        snprintf(dir, sizeof(dir), "/proc/%d/task", (int)out[i]);
        DIR *d = opendir(dir);
        struct dirent *t;
        while (d && (t = readdir(d))) {
            if (t->d_name[0] == '.')
                continue;
            char path[384];
            snprintf(path, sizeof(path), "%s/%s/children", dir, t->d_name);
            FILE *f = fopen(path, "re");
            int child;
            while (f && n < max && fscanf(f, "%d", &child) == 1)
                out[n++] = child;
            if (f)
                fclose(f);
        }
        if (d)
            closedir(d);
    }
    return n;
}

static bool reap(struct doc_run *r, int flags)
{
    if (r->exited)
        return true;
    if (waitpid(r->pid, &r->status, flags) == r->pid) {
        r->exited = true;
        r->seconds = now() - r->started;
    }
    return r->exited;
}

/* Exited but not reaped: /proc has nothing left to inspect. */
static bool gone(const struct doc_run *r)
{
    siginfo_t info = { 0 };
    return waitid(P_PID, (id_t)r->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == r->pid;
}

pid_t doc_run_wait_ready(struct doc_run *r, double timeout)
{
    pid_t *pids = malloc(MAX_TREE * sizeof(*pids));
    pid_t found = 0;
    double joined = 0; /* when a record saying "on" was first seen */
    while (pids && !found) {
        if (gone(r)) {
            reap(r, 0);
            break;
        }
        int n = tree(r->pid, pids, MAX_TREE);
        for (int i = 0; i < n && !found; i++) {
            /* A process is recorded as joined before vgpu loads the driver behind itself: a
             * moment's grace shows it with both. */
            int record = has_record(pids[i]);
            if (record == 2 && !joined)
                joined = now();
            if (record == 1 || (record == 2 && (driver_mapped(pids[i]) || now() - joined >= DRIVER_GRACE_S)))
                found = pids[i];
        }
        if (!found && now() - r->started >= timeout)
            found = r->pid;
        if (!found)
            usleep(POLL_US);
    }
    free(pids);
    return found;
}

void doc_run_finish(struct doc_run *r, double timeout)
{
    while (!reap(r, WNOHANG) && now() - r->started < timeout)
        usleep(POLL_US);
    if (r->exited)
        return;
    r->timed_out = true;
    kill(-r->pid, SIGTERM);
    for (int i = 0; i < 100 && !reap(r, WNOHANG); i++)
        usleep(POLL_US);
    if (!r->exited) {
        kill(-r->pid, SIGKILL);
        reap(r, 0);
    }
}

/* The last lines of a file, joined with " | ". */
static void tail(const char *path, int lines, char *out, size_t len)
{
    FILE *f = fopen(path, "re");
    char ring[8][512];
    int n = 0;
    out[0] = '\0';
    if (!f)
        return;
    while (fgets(ring[n % 8], sizeof(ring[0]), f)) {
        ring[n % 8][strcspn(ring[n % 8], "\n")] = '\0';
        n++;
    }
    fclose(f);
    for (int i = n > lines ? n - lines : 0; i < n; i++) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", used ? " | " : "", ring[i % 8]);
    }
}

/* "vgpu[PID]: LEVEL: text": the level and where the text starts, or NULL. */
static const char *log_level(const char *line, const char **text)
{
    static const char *const levels[] = { "error", "warn", "info" };
    if (strncmp(line, "vgpu[", 5) != 0)
        return NULL;
    const char *p = strstr(line, "]: ");
    if (!p)
        return NULL;
    p += 3;
    for (size_t i = 0; i < sizeof(levels) / sizeof(*levels); i++) {
        size_t n = strlen(levels[i]);
        if (strncmp(p, levels[i], n) == 0 && p[n] == ':') {
            *text = p + n + 2;
            return levels[i];
        }
    }
    return NULL;
}

void doc_run_report(const struct doc_run *r, struct doc_report *rep, const char *skip, bool recorded)
{
    char last[2048];
    if (r->timed_out)
        doc_add(rep, DOC_INFO, "run", "the command ran until the timeout and was stopped");
    else if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0)
        doc_add(rep, DOC_INFO, "run", "the command exited 0 after %.2f s", r->seconds);
    else {
        tail(r->out, 3, last, sizeof(last));
        doc_add(rep, DOC_INFO, "run", "the command %s %d after %.2f s%s%s",
                WIFEXITED(r->status) ? "exited" : "was killed by signal",
                WIFEXITED(r->status) ? WEXITSTATUS(r->status) : WTERMSIG(r->status), r->seconds,
                last[0] ? "; its last output: " : "", last);
    }
    FILE *f = fopen(r->log, "re");
    char line[1024];
    int shown = 0;
    while (f && shown < MAX_LOG_LINES && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *text, *level = log_level(line, &text);
        if (!level || (skip && *skip && strstr(line, skip)))
            continue;
        if (strcmp(level, "error") == 0)
            doc_fix(doc_add(rep, DOC_PROBLEM, "log", "%s", line), "do what the message asks, then run again");
        else if (strcmp(level, "warn") == 0)
            doc_fix(doc_add(rep, DOC_WARNING, "log", "%s", line), "do what the message asks, then run again");
        else if (!recorded && strstr(text, "joined vGPU"))
            doc_add(rep, DOC_OK, "log", "%s", line);
        else
            continue;
        shown++;
    }
    if (f)
        fclose(f);
    if (!f)
        doc_add(rep, DOC_INFO, "log", "vgpu logged nothing: it was never loaded, or the command did not use CUDA or "
                "NVML");
    else if (shown == 0)
        doc_add(rep, DOC_INFO, "log", "vgpu logged no error or warning");
}

void doc_run_json(const struct doc_run *r, FILE *out)
{
    fputs("\"log\":[", out);
    FILE *f = fopen(r->log, "re");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *text;
        if (!log_level(line, &text))
            continue;
        fputs(n++ ? "," : "", out);
        vgpu_json_string(out, line);
    }
    if (f)
        fclose(f);
    fputc(']', out);
}

void doc_run_cleanup(struct doc_run *r)
{
    if (!r->dir[0])
        return;
    unlink(r->log);
    unlink(r->out);
    rmdir(r->dir);
}
