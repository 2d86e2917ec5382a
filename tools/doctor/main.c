/*
 * vgpu-doctor: is vgpu in this process, and if not, why not?
 *
 *   vgpu-doctor [OPTIONS] PID
 *   vgpu-doctor [OPTIONS] [--preload] [--timeout SECONDS] -- COMMAND [ARGS...]
 *   vgpu-doctor [OPTIONS] --service NAME
 *
 * Reads the process (its mapped libraries, environment, program, status
 * record) and the machine (the ld.so configuration, the service's drop-in,
 * the mediator, Vulkan drivers), and says what it found; every problem
 * comes with the command that fixes it.  Exit status: 0 when nothing needs
 * fixing, 1 when something does, 2 for a usage error.
 */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"
#include "tools/doctor/launch.h"
#include "tools/lib/find_program.h"
#include "tools/lib/json_out.h"
#include "tools/lib/terminal_safe.h"

#include "common/log.h"
#include "vgpu_install_dirs.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { EXIT_CLEAN = 0, EXIT_FOUND = 1, EXIT_USAGE = 2 };
#define DEFAULT_TIMEOUT 10.0

static const char usage_text[] =
    "Usage: vgpu-doctor [OPTIONS] PID\n"
    "       vgpu-doctor [OPTIONS] [--preload] [--timeout SECONDS] -- COMMAND [ARGS...]\n"
    "       vgpu-doctor [OPTIONS] --service NAME\n";

static const char help_text[] =
    "Is vgpu in this process, and if not, why not?  Checks the libraries a process\n"
    "mapped, its LD_PRELOAD and its parent's, its program, the vGPU it joined (or why\n"
    "it was refused), the ld.so configuration, a service's drop-in, the mediator and\n"
    "Vulkan drivers, and gives the command that fixes each problem.\n"
    "\n"
    "  PID                check a running process\n"
    "  -- COMMAND         run COMMAND (with VGPU_LOG=info to a temporary log) and check it\n"
    "                     once vgpu has joined its vGPU; it is stopped at the timeout\n"
    "  --preload          with COMMAND: preload vgpu's libraries, as vgpu-run does\n"
    "  --timeout SECONDS  with COMMAND: how long it may run (default 10)\n"
    "  --service NAME     check NAME.service's systemd drop-in too\n"
    "  --lib-dir DIR      where vgpu's libraries are (default: as vgpu-run finds them)\n"
    "  --root DIR         read every file (/proc, /etc, library directories, the socket)\n"
    "                     below DIR\n"
    "  --json             one JSON document instead of text\n"
    "  -h, --help         show this help\n"
    "  --version          show the version\n"
    "\n"
    "Exit status: 0 when no problem or warning was found, 1 when some were, 2 for a\n"
    "usage error (or a PID that is not there).\n";

enum { OPT_SERVICE = 256, OPT_ROOT, OPT_JSON, OPT_PRELOAD, OPT_TIMEOUT, OPT_LIB_DIR, OPT_VERSION };

struct options {
    int pid;
    char **command;
    const char *service, *root, *lib_dir;
    bool json, preload;
    double timeout;
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("vgpu-doctor: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%sTry 'vgpu-doctor --help' for the options.\n", usage_text);
    return EXIT_USAGE;
}

/* -1: go on; else the exit status. */
static int parse_args(int argc, char **argv, struct options *o)
{
    static const struct option opts[] = {
        { "service", required_argument, NULL, OPT_SERVICE }, { "root", required_argument, NULL, OPT_ROOT },
        { "json", no_argument, NULL, OPT_JSON },             { "preload", no_argument, NULL, OPT_PRELOAD },
        { "timeout", required_argument, NULL, OPT_TIMEOUT }, { "lib-dir", required_argument, NULL, OPT_LIB_DIR },
        { "help", no_argument, NULL, 'h' },                  { "version", no_argument, NULL, OPT_VERSION },
        { NULL, 0, NULL, 0 },
    };
    o->timeout = DEFAULT_TIMEOUT;
    opterr = 0;
    int c;
    /* '+': stop at COMMAND, whose own options are not ours. */
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'h':
            fputs(usage_text, stdout);
            fputs(help_text, stdout);
            return EXIT_CLEAN;
        case OPT_VERSION:
            puts("vgpu-doctor " VGPU_VERSION);
            return EXIT_CLEAN;
        case OPT_SERVICE: o->service = optarg; break;
        case OPT_ROOT: o->root = optarg; break;
        case OPT_JSON: o->json = true; break;
        case OPT_PRELOAD: o->preload = true; break;
        case OPT_LIB_DIR: o->lib_dir = optarg; break;
        case OPT_TIMEOUT:
            o->timeout = strtod(optarg, &end);
            if (*end || !(o->timeout > 0))
                return usage_error("--timeout takes a positive number of seconds, not '%s'", optarg);
            break;
        case ':': return usage_error("option '%s' needs an argument", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    bool dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
    if (dashdash) {
        if (optind >= argc)
            return usage_error("no COMMAND after --");
        o->command = argv + optind;
    } else if (optind < argc) {
        char *end;
        long pid = strtol(argv[optind], &end, 10);
        if (*end || pid <= 0 || pid > INT_MAX)
            return usage_error("'%s' is not a process id (to run a command: vgpu-doctor -- COMMAND)", argv[optind]);
        if (optind + 1 < argc)
            return usage_error("one PID at a time ('%s' is one too many)", argv[optind + 1]);
        o->pid = (int)pid;
    } else if (!o->service) {
        return usage_error("name a process (PID), a command (-- COMMAND) or a service (--service NAME)");
    }
    if (o->preload && !o->command)
        return usage_error("--preload goes with -- COMMAND");
    return -1;
}

/* The process's own root when it is in a container (another mount namespace's root), else the host's. */
static void target_fs(struct doc_ctx *c)
{
    c->fs = c->host;
    if (!c->proc)
        return;
    char mine[PATH_MAX * 2], theirs[64], full[PATH_MAX];
    struct stat a, b;
    snprintf(theirs, sizeof(theirs), "/proc/%d/root", c->proc->pid);
    doc_fs_path(&c->host, theirs, full, sizeof(full));
    if (stat(full, &a) != 0 || stat(doc_fs_path(&c->host, "/proc/self/root", mine, sizeof(mine)), &b) != 0)
        return;
    if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        snprintf(c->fs.root, sizeof(c->fs.root), "%s", full);
}

static void find_libs(struct doc_ctx *c, const char *lib_dir)
{
    char err[8192];
    if (vgpu_find_libs(lib_dir, true, &c->libs, err, sizeof(err)) == 0)
        return;
    /* For the fixes' sake: where an install puts them. */
    snprintf(c->libs.dir, sizeof(c->libs.dir), "%s", VGPU_LIBDIR);
    snprintf(c->libs.cuda, sizeof(c->libs.cuda), "%s/%s", VGPU_LIBDIR, VGPU_CUDA_LIB);
    snprintf(c->libs.nvml, sizeof(c->libs.nvml), "%s/%s", VGPU_LIBDIR, VGPU_NVML_LIB);
}

/* The program a command ran (its interpreter, for a script), or NULL. */
static const char *command_program(const char *command, char *out, size_t len)
{
    if (vgpu_find_program(command, out, len) != 0)
        return NULL;
    vgpu_follow_interpreters(out, len);
    return out;
}

static void run_checks(struct doc_ctx *c)
{
    doc_check_program(c);
    if (!c->is_static) {
        doc_check_maps(c);
        doc_check_preload(c);
        doc_check_remote(c);
        doc_check_record(c);
    }
    doc_check_mediator(c);
    doc_check_ldso(c);
    doc_check_service(c);
    doc_check_vulkan(c);
}

static void print_record_json(const struct doc_ctx *c)
{
    const struct vgpu_status_page *r = &c->record;
    if (!c->have_record) {
        fputs("null", stdout);
        return;
    }
    printf("{\"pid\":%d,\"mode\":", r->pid);
    vgpu_json_string(stdout, r->mode);
    fputs(",\"source\":", stdout);
    vgpu_json_string(stdout, r->source);
    fputs(",\"vgpu\":", stdout);
    vgpu_json_string(stdout, r->vgpu);
    fputs(",\"bar0\":", stdout);
    vgpu_json_string(stdout, r->bar0);
    fputs(",\"socket\":", stdout);
    vgpu_json_string(stdout, r->socket);
    printf(",\"slot\":%d,\"devices\":[", r->slot);
    for (int i = 0; i < r->ndev; i++) {
        printf("%s{\"index\":%d,\"uuid\":", i ? "," : "", i);
        vgpu_json_string(stdout, r->dev[i].uuid);
        fputs(",\"gpu\":", stdout);
        vgpu_json_string(stdout, r->dev[i].physical);
        printf(",\"memory_quota\":%llu,\"memory_total\":%llu}", (unsigned long long)r->dev[i].limit,
               (unsigned long long)r->dev[i].total);
    }
    fputs("],\"reason\":", stdout);
    vgpu_json_string(stdout, r->reason);
    fputc('}', stdout);
}

static void print_json(const struct doc_ctx *c, const struct options *o, const struct doc_run *run)
{
    fputs("{\"doctor\":", stdout);
    vgpu_json_string(stdout, VGPU_VERSION);
    fputs(",\"root\":", stdout);
    if (c->host.root[0])
        vgpu_json_string(stdout, c->host.root);
    else
        fputs("null", stdout);
    fputs(",\"process\":", stdout);
    if (c->proc) {
        printf("{\"pid\":%d,\"name\":", c->proc->pid);
        vgpu_json_string(stdout, c->proc->name);
        fputs(",\"command\":", stdout);
        vgpu_json_string(stdout, c->proc->command);
        printf(",\"uid\":%u,\"ppid\":%d}", (unsigned)c->proc->euid, c->proc->ppid);
    } else {
        fputs("null", stdout);
    }
    fputs(",\"service\":", stdout);
    if (o->service)
        vgpu_json_string(stdout, o->service);
    else
        fputs("null", stdout);
    if (run) {
        fputs(",\"run\":{\"command\":", stdout);
        vgpu_json_string(stdout, o->command[0]);
        printf(",\"exit\":");
        if (run->exited && WIFEXITED(run->status))
            printf("%d", WEXITSTATUS(run->status));
        else
            fputs("null", stdout);
        printf(",\"timed_out\":%s,", run->timed_out ? "true" : "false");
        doc_run_json(run, stdout);
        fputc('}', stdout);
    }
    fputs(",\"vgpu\":", stdout);
    print_record_json(c);
    fputc(',', stdout);
    doc_print_json(stdout, &c->report);
    fputs("}\n", stdout);
}

static void print_text(const struct doc_ctx *c, const struct options *o)
{
    if (c->proc) {
        /* The process named itself, and wrote its command line. */
        char name[sizeof(c->proc->name)], command[sizeof(c->proc->command)];
        snprintf(name, sizeof(name), "%s", c->proc->name);
        snprintf(command, sizeof(command), "%s", c->proc->command);
        vgpu_terminal_safe(name);
        vgpu_terminal_safe(command);
        printf("vgpu-doctor: process %d (%s, uid %u): %s\n", c->proc->pid, name, (unsigned)c->proc->euid, command);
    }
    else if (o->command)
        printf("vgpu-doctor: %s (no process left to inspect)\n", o->command[0]);
    else
        printf("vgpu-doctor: %s.service\n", o->service);
    if (c->host.root[0])
        printf("(files read below %s)\n", c->host.root);
    putchar('\n');
    doc_print_text(stdout, &c->report);
}

int main(int argc, char **argv)
{
    struct options o = { 0 };
    int status = parse_args(argc, argv, &o);
    if (status >= 0)
        return status;
    vgpu_log_set_program("vgpu-doctor");

    /* Large, so static; main's, for the one run. */
    static struct doc_ctx c;
    char err[8192];
    if (doc_fs_init(&c.host, o.root, err, sizeof(err)) != 0)
        return usage_error("%s", err);
    c.service = o.service;
    find_libs(&c, o.lib_dir);

    struct doc_run run, *ran = NULL;
    char program[PATH_MAX];
    if (o.command) {
        if (doc_run_start(&run, o.command, o.preload ? &c.libs : NULL, err, sizeof(err)) != 0) {
            doc_run_cleanup(&run);
            fprintf(stderr, "vgpu-doctor: %s\n", err);
            return EXIT_USAGE;
        }
        ran = &run;
        o.pid = doc_run_wait_ready(&run, o.timeout);
        /* Held still while inspected: a short command could exit half-read. */
        if (o.pid > 0)
            kill(o.pid, SIGSTOP);
        else
            c.program = command_program(o.command[0], program, sizeof(program));
    }

    static struct doc_proc proc; /* main's: what c.proc points at */
    if (o.pid > 0) {
        int e = doc_proc_load(&c.host, o.pid, &proc);
        if (e == 0)
            c.proc = &proc;
        else if (!ran)
            return usage_error("no process %d to inspect: %s", o.pid, strerror(e));
    }
    target_fs(&c);
    run_checks(&c);
    if (ran && o.pid > 0)
        kill(o.pid, SIGCONT);
    if (ran) {
        doc_run_finish(ran, o.timeout);
        doc_run_report(ran, &c.report, c.have_record ? c.record.reason : NULL, c.have_record);
    }

    if (o.json)
        print_json(&c, &o, ran);
    else
        print_text(&c, &o);
    if (ran)
        doc_run_cleanup(ran);
    status = doc_count(&c.report, DOC_PROBLEM) + doc_count(&c.report, DOC_WARNING) ? EXIT_FOUND : EXIT_CLEAN;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "vgpu-doctor: cannot write to standard output: %s\n", strerror(errno));
        status = EXIT_USAGE;
    }
    if (c.proc)
        doc_proc_free(c.proc);
    doc_report_free(&c.report);
    return status;
}
