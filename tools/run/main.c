/*
 * vgpu-run: run a command under vgpu.
 *
 *   vgpu-run [OPTIONS] [--] COMMAND [ARGS...]
 *
 * Puts libvgpu-cuda.so and libvgpu-nvml.so first in LD_PRELOAD, sets the
 * VGPU_* variables the options name and execs COMMAND.  First it looks at
 * the program that will really run (following #! lines, and "#!/usr/bin/env
 * NAME" to NAME on PATH) and explains the cases in which LD_PRELOAD cannot
 * bring vgpu in: static programs, secure-execution mode, programs of another
 * architecture, and Go programs that may rebuild their children's environment.
 */
#define _GNU_SOURCE
#include "tools/lib/elf_facts.h"
#include "tools/lib/find_libs.h"
#include "tools/lib/find_program.h"
#include "vgpu_install_dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

/* Exit statuses: those of env(1) and the shell. */
enum {
    CONTINUE = -1, /* not an exit status: go on */
    EXIT_USAGE = 2,
    EXIT_INTERNAL = 125,
    EXIT_CANNOT_RUN = 126,
    EXIT_NOT_FOUND = 127,
};

enum level { L_ERROR, L_WARN, L_INFO, L_DEBUG };
static const char *const level_names[] = { "error", "warn", "info", "debug" };
static enum level verbosity = L_WARN;

/* The variables that options set, in the order --dry-run prints them. */
enum var {
    V_TRACE,
    V_LOG,
    V_LOG_FILE,
    V_REAL_LIBCUDA,
    V_REAL_NVML,
    V_MEMORY,
    V_DEVICES,
    V_BAR0,
    V_SOCKET,
    N_VARS
};
static const char *const var_names[N_VARS] = {
    [V_TRACE] = "VGPU_TRACE",
    [V_LOG] = "VGPU_LOG",
    [V_LOG_FILE] = "VGPU_LOG_FILE",
    [V_REAL_LIBCUDA] = "VGPU_REAL_LIBCUDA",
    [V_REAL_NVML] = "VGPU_REAL_NVML",
    [V_MEMORY] = "VGPU_MEMORY_LIMIT",
    [V_DEVICES] = "VGPU_VISIBLE_DEVICES",
    [V_BAR0] = "VGPU_BAR0",
    [V_SOCKET] = "VGPU_MEDIATOR_SOCKET",
};

enum {
    OPT_VAR = 256, /* OPT_VAR + enum var: an option that sets that variable */
    OPT_LIB_DIR = OPT_VAR + N_VARS,
    OPT_NO_NVML,
    OPT_ALLOW_STATIC,
    OPT_DRY_RUN,
    OPT_VERSION,
    OPT_HELP, /* not 'h': every long option's value is at least OPT_VAR */
};

static const struct option long_options[] = {
    { "trace", no_argument, NULL, OPT_VAR + V_TRACE },
    { "log", required_argument, NULL, OPT_VAR + V_LOG },
    { "log-file", required_argument, NULL, OPT_VAR + V_LOG_FILE },
    { "real-libcuda", required_argument, NULL, OPT_VAR + V_REAL_LIBCUDA },
    { "real-nvml", required_argument, NULL, OPT_VAR + V_REAL_NVML },
    { "memory", required_argument, NULL, OPT_VAR + V_MEMORY },
    { "devices", required_argument, NULL, OPT_VAR + V_DEVICES },
    { "bar0", required_argument, NULL, OPT_VAR + V_BAR0 },
    { "socket", required_argument, NULL, OPT_VAR + V_SOCKET },
    { "lib-dir", required_argument, NULL, OPT_LIB_DIR },
    { "no-nvml", no_argument, NULL, OPT_NO_NVML },
    { "allow-static", no_argument, NULL, OPT_ALLOW_STATIC },
    { "dry-run", no_argument, NULL, OPT_DRY_RUN },
    { "help", no_argument, NULL, OPT_HELP },
    { "version", no_argument, NULL, OPT_VERSION },
    { NULL, 0, NULL, 0 },
};

static const char synopsis[] = "Usage: vgpu-run [OPTIONS] [--] COMMAND [ARGS...]\n";

static const char help_text[] =
    "Run COMMAND with vgpu's libcuda and NVML libraries preloaded.\n"
    "\n"
    "  --memory SIZE        set VGPU_MEMORY_LIMIT\n"
    "  --devices LIST       set VGPU_VISIBLE_DEVICES\n"
    "  --bar0 PATH          set VGPU_BAR0\n"
    "  --socket PATH        set VGPU_MEDIATOR_SOCKET\n"
    "  --real-libcuda PATH  set VGPU_REAL_LIBCUDA, the driver's libcuda.so.1\n"
    "  --real-nvml PATH     set VGPU_REAL_NVML, the driver's libnvidia-ml.so.1\n"
    "  --trace              set VGPU_TRACE=1: one line per driver call\n"
    "  --log LEVEL          set VGPU_LOG: error, warn, info or debug\n"
    "  --log-file FILE      set VGPU_LOG_FILE\n"
    "  --lib-dir DIR        take " VGPU_CUDA_LIB " and " VGPU_NVML_LIB " from DIR\n"
    "                       (default: $VGPU_LIB_DIR, then next to vgpu-run, then\n"
    "                       " VGPU_LIBDIR ")\n"
    "  --no-nvml            preload only " VGPU_CUDA_LIB "\n"
    "  --allow-static       run COMMAND even if it is statically linked\n"
    "  --dry-run            print the variables and the command instead of running it\n"
    "  -h, --help           show this help\n"
    "  --version            show the version\n"
    "\n"
    "Exit status: COMMAND's; 2 for a usage error, 125 if vgpu-run itself fails,\n"
    "126 if COMMAND cannot be run, 127 if it or vgpu's libraries are not found.\n";

struct options {
    const char *vars[N_VARS]; /* NULL: leave the variable as it is */
    const char *lib_dir;
    bool no_nvml, allow_static, dry_run;
    char **command;
};

static void vsay(enum level level, const char *fmt, va_list ap)
{
    if (level > verbosity)
        return;
    fputs(level == L_WARN ? "vgpu-run: warning: " : "vgpu-run: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void say(enum level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(enum level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(level, fmt, ap);
    va_end(ap);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(L_ERROR, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%sTry 'vgpu-run --help' for the options.\n", synopsis);
    return EXIT_USAGE;
}

/* Exit status after printing to stdout: a full disk or closed pipe is an error. */
static int finish_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        say(L_ERROR, "cannot write to standard output: %s", strerror(errno));
        return EXIT_INTERNAL;
    }
    return 0;
}

static int parse_level(const char *s)
{
    /* Case-insensitive, as the libraries read VGPU_LOG (common/log.c). */
    for (int i = 0; i < (int)(sizeof(level_names) / sizeof(*level_names)); i++)
        if (strcasecmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

/* getopt_long's optopt: a short option's letter, a known long option's
 * value (given an argument it does not take), or 0 for an unknown one. */
static int bad_option(char **argv)
{
    const char *arg = argv[optind - 1];
    if (optopt > 0 && optopt < OPT_VAR)
        return usage_error("unknown option '-%c'", optopt);
    if (optopt >= OPT_VAR)
        return usage_error("option '%.*s' takes no argument", (int)strcspn(arg, "="), arg);
    return usage_error("unknown option '%s'", arg);
}

/* Returns CONTINUE, or the exit status once --help, --version or an error is done. */
static int parse_args(int argc, char **argv, struct options *o)
{
    int c;
    opterr = 0;
    /* '+': stop at COMMAND, whose own options are not ours. */
    while ((c = getopt_long(argc, argv, "+:h", long_options, NULL)) != -1) {
        switch (c) {
        case 'h':
        case OPT_HELP:
            fputs(synopsis, stdout);
            fputs(help_text, stdout);
            return finish_stdout();
        case OPT_VERSION:
            puts("vgpu-run " VGPU_VERSION);
            return finish_stdout();
        case OPT_LIB_DIR:
            o->lib_dir = optarg;
            break;
        case OPT_NO_NVML:
            o->no_nvml = true;
            break;
        case OPT_ALLOW_STATIC:
            o->allow_static = true;
            break;
        case OPT_DRY_RUN:
            o->dry_run = true;
            break;
        case OPT_VAR + V_TRACE:
            o->vars[V_TRACE] = "1";
            break;
        case OPT_VAR + V_LOG:
            if (parse_level(optarg) < 0)
                return usage_error("--log takes error, warn, info or debug, not '%s'", optarg);
            o->vars[V_LOG] = optarg;
            break;
        case ':':
            return usage_error("option '%s' needs an argument", argv[optind - 1]);
        case '?':
            return bad_option(argv);
        default: /* the rest set their variable to their argument, unchecked */
            o->vars[c - OPT_VAR] = optarg;
            break;
        }
    }
    if (optind >= argc)
        return usage_error("no COMMAND given");
    o->command = argv + optind;
    return CONTINUE;
}

static void set_verbosity(const struct options *o)
{
    const char *v = o->vars[V_LOG] ? o->vars[V_LOG] : getenv("VGPU_LOG");
    int level = v ? parse_level(v) : -1;
    verbosity = level < 0 ? L_WARN : (enum level)level;
}

/* ---- finding vgpu's libraries ---- */

static int find_libs(const struct options *o, struct vgpu_libs *libs)
{
    char err[8192 + 256];
    if (vgpu_find_libs(o->lib_dir, !o->no_nvml, libs, err, sizeof(err)) == 0)
        return 0;
    say(L_ERROR, "%s%s", err, libs->dir[0] && !o->no_nvml ? "; use --no-nvml to preload only the CUDA library" : "");
    return -1;
}

/* ---- finding and inspecting COMMAND ---- */

/* Finds COMMAND; returns CONTINUE, or reports it as a shell would and returns its exit status. */
static int resolve_command(const char *name, char *out, size_t len)
{
    int err = vgpu_find_program(name, out, len);
    if (err == 0)
        return CONTINUE;
    if (!strchr(name, '/') && err == ENOENT)
        say(L_ERROR, "%s: command not found", name);
    else
        say(L_ERROR, "%s: %s", name, strerror(err));
    return err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}

/* Why exec'ing path would put the loader in secure-execution mode (AT_SECURE),
 * or NULL.  The kernel asks for it when exec changes the process's
 * credentials, so a set-user-ID program its owner runs is not affected. */
static const char *secure_exec_reason(const char *path)
{
    struct stat st;
    struct statvfs vfs;
    if (stat(path, &st) != 0 || (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID)))
        return NULL;
    if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
        return "set-user-ID";
    if ((st.st_mode & S_ISGID) && st.st_gid != getgid())
        return "set-group-ID";
    if (getuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0)
        return "given file capabilities";
    return NULL;
}

/* Explains what would keep vgpu out of COMMAND; returns CONTINUE, or the
 * exit status if COMMAND must not run.  path is COMMAND's file. */
static int check_program(const char *command, const char *path, bool allow_static)
{
    char prog[PATH_MAX], what[2 * PATH_MAX + 32];
    snprintf(prog, sizeof(prog), "%s", path);
    vgpu_follow_interpreters(prog, sizeof(prog));
    if (strcmp(prog, path) == 0)
        snprintf(what, sizeof(what), "%s", command);
    else
        snprintf(what, sizeof(what), "%s (the interpreter of %s)", prog, command);

    struct vgpu_elf_facts f;
    vgpu_read_elf_facts(prog, &f);
    if (vgpu_elf_is_static(&f)) {
        if (!allow_static) {
            say(L_ERROR,
                "%s is statically linked, so LD_PRELOAD cannot load vgpu into it and it would run without "
                "vGPU limits. Use a dynamically linked build, or install vgpu in place of libcuda.so.1 "
                "(docs/guide/running.md).",
                what);
            return EXIT_CANNOT_RUN;
        }
        say(L_WARN, "%s is statically linked, so LD_PRELOAD cannot load vgpu into it; running it without "
            "vGPU limits, as --allow-static asks", what);
        return CONTINUE;
    }
    if (f.program && !f.x86_64)
        say(L_WARN, "%s is not an x86-64 program, so the loader will skip vgpu's x86-64 libraries and it will "
            "run without vGPU limits", what);

    const char *secure = secure_exec_reason(prog);
    if (secure)
        say(L_WARN, "%s is %s, so the dynamic loader runs it in secure-execution mode, where it ignores "
            "LD_PRELOAD entries that contain a slash: vgpu will not be loaded into it", what, secure);

    if (f.go)
        say(L_INFO, "%s is a Go program. Its children keep LD_PRELOAD and the VGPU_* settings when it passes its "
            "environment on, as Ollama does (os.Environ() plus its library directories); a child whose "
            "environment it builds from scratch loses them and runs outside the vGPU, on the whole GPU. For such "
            "a server, list vgpu's library directory in /etc/ld.so.conf.d and run vgpu-mediatord "
            "(docs/guide/running.md): together they reach children whatever their environment.", what);
    return CONTINUE;
}

/* ---- the new environment ---- */

/* Prints w so that a POSIX shell reads it back as one word. */
static void print_word(const char *w)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-";
    if (*w && w[strspn(w, safe)] == '\0') {
        fputs(w, stdout);
        return;
    }
    putchar('\'');
    for (; *w; w++) {
        if (*w == '\'')
            fputs("'\\''", stdout);
        else
            putchar(*w);
    }
    putchar('\'');
}

static int print_plan(const char *preload, const struct options *o)
{
    printf("LD_PRELOAD=%s\n", preload);
    for (int i = 0; i < N_VARS; i++)
        if (o->vars[i])
            printf("%s=%s\n", var_names[i], o->vars[i]);
    for (char **arg = o->command; *arg; arg++) {
        if (arg != o->command)
            putchar(' ');
        print_word(*arg);
    }
    putchar('\n');
    return finish_stdout();
}

static int apply_env(const char *preload, const struct options *o)
{
    if (setenv("LD_PRELOAD", preload, 1) != 0) {
        say(L_ERROR, "cannot set LD_PRELOAD: %s", strerror(errno));
        return -1;
    }
    for (int i = 0; i < N_VARS; i++) {
        if (o->vars[i] && setenv(var_names[i], o->vars[i], 1) != 0) {
            say(L_ERROR, "cannot set %s: %s", var_names[i], strerror(errno));
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options o = { 0 };
    int status = parse_args(argc, argv, &o);
    if (status != CONTINUE)
        return status;
    set_verbosity(&o);

    struct vgpu_libs libs;
    if (find_libs(&o, &libs) != 0)
        return EXIT_NOT_FOUND;

    char path[PATH_MAX];
    status = resolve_command(o.command[0], path, sizeof(path));
    if (status == CONTINUE)
        status = check_program(o.command[0], path, o.allow_static);
    if (status != CONTINUE)
        return status;

    char *preload = vgpu_preload_list(&libs, getenv("LD_PRELOAD"));
    if (!preload) {
        say(L_ERROR, "out of memory");
        return EXIT_INTERNAL;
    }
    if (o.dry_run) {
        status = print_plan(preload, &o);
        free(preload);
        return status;
    }
    status = apply_env(preload, &o);
    free(preload); /* setenv copied it */
    if (status != 0)
        return EXIT_INTERNAL;

    execvp(o.command[0], o.command);
    int err = errno;
    say(L_ERROR, "%s: %s", o.command[0], strerror(err));
    return err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}
