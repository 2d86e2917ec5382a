/*
 * vgpu-setup: put services, the whole machine or containers under vgpu,
 * and take them out again exactly as they were.
 *
 *   vgpu-setup enable --service NAME [SETTINGS] | --system
 *   vgpu-setup disable --service NAME | --system
 *   vgpu-setup status
 *   vgpu-setup cdi [--output FILE] [--config FILE] [--standalone ...]
 *
 * Written in C, like the other tools, to share the loader-cache reader
 * (forwarder/ldso.c), the ELF check that tells vgpu from the driver
 * (forwarder/elfcheck.c), the settings parser of the libraries and the
 * mediator's config parser, rather than keep second copies in a script.
 */
#define _GNU_SOURCE
#include "tools/setup/setup.h"
#include "tools/setup/status.h"
#include "tools/setup/targets/cdi.h"
#include "tools/setup/targets/service.h"
#include "tools/setup/targets/system.h"
#include "tools/setup/targets/unit.h"
#include "common/contract/protocol/protocol.h"
#include "common/contract/settings/settings.h"
#include "vgpu_install_dirs.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

enum { EXIT_FAILED = 1, EXIT_USAGE = 2 };

enum opt {
    O_SERVICE, O_SYSTEM, O_SYMLINK, O_MEDIATOR, O_VGPU, O_MEMORY, O_COMPUTE, O_COMPUTE_MODE, O_DEVICES, O_BAR0, O_LOG, O_ALLOW_MISSING,
    O_OUTPUT, O_CONFIG, O_STANDALONE, O_ROOT, O_LIBDIR, O_SYSTEMCTL, O_LDCONFIG, O_HELP, O_VERSION, O_HOOK, N_OPTS
};
#define BIT(o) (1u << (o))
#define GLOBAL (BIT(O_ROOT) | BIT(O_LIBDIR) | BIT(O_SYSTEMCTL) | BIT(O_LDCONFIG))

static const struct option long_options[] = {
    { "service", required_argument, NULL, O_SERVICE },
    { "system", no_argument, NULL, O_SYSTEM },
    { "symlink", no_argument, NULL, O_SYMLINK },
    { "mediator", no_argument, NULL, O_MEDIATOR },
    { "vgpu", required_argument, NULL, O_VGPU },
    { "memory", required_argument, NULL, O_MEMORY },
    { "compute", required_argument, NULL, O_COMPUTE },
    { "compute-mode", required_argument, NULL, O_COMPUTE_MODE },
    { "devices", required_argument, NULL, O_DEVICES },
    { "bar0", required_argument, NULL, O_BAR0 },
    { "log", required_argument, NULL, O_LOG },
    { "allow-missing-unit", no_argument, NULL, O_ALLOW_MISSING },
    { "output", required_argument, NULL, O_OUTPUT },
    { "config", required_argument, NULL, O_CONFIG },
    { "standalone", no_argument, NULL, O_STANDALONE },
    { "root", required_argument, NULL, O_ROOT },
    { "libdir", required_argument, NULL, O_LIBDIR },
    { "systemctl", required_argument, NULL, O_SYSTEMCTL },
    { "ldconfig", required_argument, NULL, O_LDCONFIG },
    { "help", no_argument, NULL, O_HELP },
    { "version", no_argument, NULL, O_VERSION },
    { "hook", required_argument, NULL, O_HOOK },
    { NULL, 0, NULL, 0 },
};

static const char usage_text[] =
    "Usage: vgpu-setup COMMAND [OPTIONS]\n"
    "\n"
    "  enable --service NAME [SETTINGS]  a systemd drop-in that runs the service's CUDA programs\n"
    "                                    in a vGPU, then systemctl daemon-reload\n"
    "  enable --system                   vgpu's symlink directory in /etc/ld.so.conf.d/000-vgpu.conf,\n"
    "                                    then ldconfig: every program loads vgpu for libcuda.so.1\n"
    "  disable --service NAME | --system put back exactly what was there before enable\n"
    "  status                            what is enabled, and what the loader's cache resolves\n"
    "  cdi                               a Container Device Interface spec, one device per vGPU\n"
    "\n"
    "SETTINGS of enable --service:\n"
    "  --symlink             LD_LIBRARY_PATH with vgpu's symlink directory first, not LD_PRELOAD\n"
    "  --mediator            the vGPU comes from vgpu-mediatord: names its socket, starts after it\n"
    "  --vgpu NAME           VGPU_NAME: which vGPU, where the service's user may use several\n"
    "  --config FILE         with --mediator: its config (default " SETUP_DEFAULT_CONFIG ")\n"
    "  --memory SIZE         standalone: VGPU_MEMORY_LIMIT (20G, 512M, or per device 0:20G,1:8G)\n"
    "  --compute SHARE       standalone: VGPU_COMPUTE_SHARE (30%, or per device 0:30%,1:50%)\n"
    "  --compute-mode MODE   standalone: VGPU_COMPUTE_MODE, share (idle time lent out) or cap\n"
    "  --devices LIST        standalone: VGPU_VISIBLE_DEVICES (indexes as nvidia-smi numbers them,\n"
    "                        or GPU-... UUIDs)\n"
    "  --bar0 PATH           standalone: VGPU_BAR0 (default: the libraries', one quota per user\n"
    "                        and device set)\n"
    "  --log LEVEL           VGPU_LOG: error, warn, info or debug\n"
    "  --allow-missing-unit  write the drop-in although no unit of that name is installed yet\n"
    "  An Ollama service also gets OLLAMA_VULKAN=0 (its Vulkan backend bypasses libcuda).\n"
    "\n"
    "Options of cdi:\n"
    "  --output FILE         the spec (default /etc/cdi/vgpu.yaml; - for standard output)\n"
    "  --config FILE         vgpu-mediatord's config (default " SETUP_DEFAULT_CONFIG ")\n"
    "  --symlink             LD_LIBRARY_PATH (it replaces the image's) rather than LD_PRELOAD\n"
    "  --hook PATH           vgpu-cdi-hook, which binds a vGPU made for containers to its container\n"
    "                        (default " VGPU_BINDIR "/vgpu-cdi-hook)\n"
    "  --standalone --devices LIST [--memory SIZE] [--compute SHARE] [--compute-mode MODE] [--vgpu NAME]\n"
    "                        one device, for a machine without a mediator (name: standalone)\n"
    "\n"
    "Everywhere:\n"
    "  --root DIR            the system under DIR (an image, a test): every path is under it,\n"
    "                        ldconfig runs as ldconfig -r DIR, and systemd is not reloaded\n"
    "                        unless --systemctl is given\n"
    "  --libdir DIR          where vgpu's libraries are (default " VGPU_LIBDIR ")\n"
    "  --systemctl CMD       the systemctl to run (default $VGPU_SETUP_SYSTEMCTL, else systemctl)\n"
    "  --ldconfig CMD        the ldconfig to run (default $VGPU_SETUP_LDCONFIG, else ldconfig)\n"
    "  -h, --help            this help;  --version: the version\n"
    "\n"
    "Exit status: 0 done (also: nothing to disable); 1 failed (the message says what to do);\n"
    "2 a usage error.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("vgpu-setup: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry 'vgpu-setup --help' for the commands and options.\n", stderr);
    return EXIT_USAGE;
}

static int failed(const char *err)
{
    fflush(stdout);
    fprintf(stderr, "vgpu-setup: %s\n", err);
    return EXIT_FAILED;
}

struct args {
    const char *command;
    unsigned seen;
    const char *val[N_OPTS];
};

static int parse(int argc, char **argv, struct args *a)
{
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        if (c == 'h' || c == O_HELP) {
            fputs(usage_text, stdout);
            exit(fflush(stdout) == 0 ? 0 : EXIT_FAILED);
        }
        if (c == O_VERSION) {
            puts("vgpu-setup " VGPU_VERSION);
            exit(fflush(stdout) == 0 ? 0 : EXIT_FAILED);
        }
        if (c == ':')
            return usage_error("option '%s' needs an argument", argv[optind - 1]);
        if (c == '?')
            return usage_error("unknown option '%s'", argv[optind - 1]);
        if (a->seen & BIT(c))
            return usage_error("--%s is given twice", long_options[c].name);
        a->seen |= BIT(c);
        a->val[c] = optarg;
        /* Values go into files that systemd, ld.so and YAML read line by line. */
        for (const char *p = optarg; p && *p; p++)
            if (iscntrl((unsigned char)*p))
                return usage_error("--%s: the value has a control character (a newline?)", long_options[c].name);
    }
    if (optind >= argc)
        return usage_error("no command given; commands: enable, disable, status, cdi");
    a->command = argv[optind];
    if (optind + 1 < argc)
        return usage_error("unexpected argument '%s' after %s", argv[optind + 1], a->command);
    return 0;
}

/* Refuses the first option given that the command does not take. */
static int only(const struct args *a, unsigned allowed, const char *what)
{
    for (int o = 0; o < N_OPTS; o++)
        if ((a->seen & BIT(o)) && !(allowed & BIT(o)))
            return usage_error("--%s does not apply to %s", long_options[o].name, what);
    return 0;
}

static bool vgpu_name_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < VGPU_NAME_LEN &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

static int absolute(const struct args *a, int o)
{
    if (a->val[o] && a->val[o][0] != '/')
        return usage_error("--%s %s: an absolute path", long_options[o].name, a->val[o]);
    return 0;
}

static int make_ctx(const struct args *a, struct setup_ctx *c)
{
    memset(c, 0, sizeof(*c));
    if (absolute(a, O_LIBDIR) || absolute(a, O_CONFIG) || absolute(a, O_BAR0) || absolute(a, O_HOOK))
        return EXIT_USAGE;
    if (a->val[O_OUTPUT] && strcmp(a->val[O_OUTPUT], "-") != 0 && absolute(a, O_OUTPUT))
        return EXIT_USAGE;
    if (a->val[O_ROOT]) {
        char real[PATH_MAX];
        struct stat st;
        if (!realpath(a->val[O_ROOT], real) || stat(real, &st) != 0 || !S_ISDIR(st.st_mode))
            return usage_error("--root %s: not a directory", a->val[O_ROOT]);
        snprintf(c->root, sizeof(c->root), "%s", strcmp(real, "/") == 0 ? "" : real);
    }
    snprintf(c->libdir, sizeof(c->libdir), "%s", a->val[O_LIBDIR] ? a->val[O_LIBDIR] : VGPU_LIBDIR);
    for (size_t n = strlen(c->libdir); n > 1 && c->libdir[n - 1] == '/'; n--)
        c->libdir[n - 1] = '\0';
    snprintf(c->linkdir, sizeof(c->linkdir), "%.*s/vgpu", (int)sizeof(c->linkdir) - 6, c->libdir);
    const char *env = getenv("VGPU_SETUP_SYSTEMCTL");
    c->systemctl = a->val[O_SYSTEMCTL] ? a->val[O_SYSTEMCTL] : env && *env ? env : c->root[0] ? NULL : "systemctl";
    env = getenv("VGPU_SETUP_LDCONFIG");
    c->ldconfig = a->val[O_LDCONFIG] ? a->val[O_LDCONFIG] : env && *env ? env : "ldconfig";
    c->config = a->val[O_CONFIG] ? a->val[O_CONFIG] : SETUP_DEFAULT_CONFIG;
    c->config_given = a->val[O_CONFIG] != NULL;
    return 0;
}

static int check_settings(const struct args *a)
{
    if (a->val[O_VGPU] && !vgpu_name_ok(a->val[O_VGPU]))
        return usage_error("--vgpu %s: a vGPU name is 1 to %d letters, digits, '_', '-' or '.'", a->val[O_VGPU],
                           VGPU_NAME_LEN - 1);
    if (a->val[O_LOG] && strcasecmp(a->val[O_LOG], "error") != 0 && strcasecmp(a->val[O_LOG], "warn") != 0 &&
        strcasecmp(a->val[O_LOG], "info") != 0 && strcasecmp(a->val[O_LOG], "debug") != 0)
        return usage_error("--log %s: error, warn, info or debug", a->val[O_LOG]);
    /* Checked as the libraries will read them.  The BAR0 file is left to the
     * libraries' default unless named: they keep it where no other user can
     * reach it. */
    struct vgpu_settings s;
    char why[512];
    struct vgpu_settings_env e = { .visible = a->val[O_DEVICES], .limit = a->val[O_MEMORY], .bar0 = a->val[O_BAR0],
                                   .share = a->val[O_COMPUTE], .mode = a->val[O_COMPUTE_MODE] };
    if ((e.limit || e.visible || e.bar0 || e.share || e.mode) && vgpu_settings_parse(&e, 0, &s, why, sizeof(why)) != 0)
        return usage_error("%s", why);
    return 0;
}

static int cmd_enable_disable(const struct args *a, const struct setup_ctx *c, bool enable)
{
    const unsigned settings = BIT(O_SYMLINK) | BIT(O_MEDIATOR) | BIT(O_VGPU) | BIT(O_MEMORY) | BIT(O_COMPUTE) |
                              BIT(O_COMPUTE_MODE) | BIT(O_DEVICES) |
                              BIT(O_BAR0) | BIT(O_LOG) | BIT(O_ALLOW_MISSING) | BIT(O_CONFIG);
    const char *cmd = enable ? "enable" : "disable";
    bool service = a->seen & BIT(O_SERVICE), system = a->seen & BIT(O_SYSTEM);
    if (service == system)
        return usage_error("%s takes --service NAME or --system%s", cmd, service ? ", not both" : "");
    if (system && only(a, GLOBAL | BIT(O_SYSTEM), enable ? "enable --system: the loader's entry serves every "
                       "program, and each takes its vGPU from the mediator or its own environment" : "disable"))
        return EXIT_USAGE;
    if (service && only(a, GLOBAL | BIT(O_SERVICE) | (enable ? settings : 0), enable ? "enable" : "disable"))
        return EXIT_USAGE;
    if (a->seen & BIT(O_MEDIATOR)) {
        for (int o = O_MEMORY; o <= O_BAR0; o++)
            if (a->seen & BIT(o))
                return usage_error("--%s with --mediator: the mediator's config decides the vGPU ([vgpu.NAME] in "
                                   "%s); drop --%s", long_options[o].name, SETUP_DEFAULT_CONFIG, long_options[o].name);
    } else if (a->seen & BIT(O_CONFIG)) {
        return usage_error("--config applies to enable with --mediator, and to cdi");
    }
    if (check_settings(a))
        return EXIT_USAGE;

    char err[4096], name[SETUP_UNIT_NAME_MAX];
    if (service && setup_unit_name(a->val[O_SERVICE], name, sizeof(name), err, sizeof(err)) != 0)
        return usage_error("%s", err);
    if (!c->root[0] && geteuid() != 0) {
        fprintf(stderr, "vgpu-setup: %s changes files in /etc: run it as root (sudo vgpu-setup %s ...)\n", cmd, cmd);
        return EXIT_FAILED;
    }
    int rc;
    if (system) {
        rc = enable ? setup_enable_system(c, err, sizeof(err)) : setup_disable_system(c, err, sizeof(err));
    } else if (enable) {
        struct setup_service_opts o = {
            .symlink = a->seen & BIT(O_SYMLINK), .mediator = a->seen & BIT(O_MEDIATOR), .vgpu = a->val[O_VGPU],
            .memory = a->val[O_MEMORY], .devices = a->val[O_DEVICES], .bar0 = a->val[O_BAR0], .log = a->val[O_LOG],
            .compute = a->val[O_COMPUTE], .compute_mode = a->val[O_COMPUTE_MODE],
        };
        rc = setup_enable_service(c, name, &o, a->seen & BIT(O_ALLOW_MISSING), err, sizeof(err));
    } else {
        rc = setup_disable_service(c, name, err, sizeof(err));
    }
    return rc == 0 ? 0 : failed(err);
}

static int cmd_cdi(const struct args *a, const struct setup_ctx *c)
{
    bool standalone = a->seen & BIT(O_STANDALONE);
    if (only(a, GLOBAL | BIT(O_OUTPUT) | BIT(O_CONFIG) | BIT(O_SYMLINK) | BIT(O_STANDALONE) | BIT(O_HOOK) |
                    (standalone ? BIT(O_MEMORY) | BIT(O_COMPUTE) | BIT(O_COMPUTE_MODE) | BIT(O_DEVICES) | BIT(O_VGPU) : 0),
             standalone ? "cdi --standalone"
                        : "cdi (--memory, --compute, --compute-mode, --devices and --vgpu go with --standalone)"))
        return EXIT_USAGE;
    if (standalone && (a->seen & BIT(O_CONFIG)))
        return usage_error("--config does not apply to cdi --standalone, which has no mediator");
    if (standalone && !a->val[O_DEVICES])
        return usage_error("cdi --standalone needs --devices LIST: the GPUs whose device files the container gets");
    if (check_settings(a))
        return EXIT_USAGE;
    struct setup_cdi_opts o = {
        .output = a->val[O_OUTPUT] ? a->val[O_OUTPUT] : "/etc/cdi/vgpu.yaml",
        .symlink = a->seen & BIT(O_SYMLINK),
        .standalone = standalone,
        .vgpu = a->val[O_VGPU] ? a->val[O_VGPU] : "standalone",
        .memory = a->val[O_MEMORY],
        .compute = a->val[O_COMPUTE],
        .compute_mode = a->val[O_COMPUTE_MODE],
        .devices = a->val[O_DEVICES],
        .hook = a->val[O_HOOK] ? a->val[O_HOOK] : VGPU_BINDIR "/vgpu-cdi-hook",
    };
    char err[4096];
    if (setup_check_libs(c, o.symlink, err, sizeof(err)) != 0 || setup_cdi(c, &o, err, sizeof(err)) != 0)
        return failed(err);
    return 0;
}

int main(int argc, char **argv)
{
    struct args a = { 0 };
    int rc = parse(argc, argv, &a);
    if (rc != 0)
        return rc;
    struct setup_ctx c;
    if ((rc = make_ctx(&a, &c)) != 0)
        return rc;
    if (strcmp(a.command, "enable") == 0 || strcmp(a.command, "disable") == 0)
        return cmd_enable_disable(&a, &c, a.command[0] == 'e');
    if (strcmp(a.command, "status") == 0) {
        if (only(&a, GLOBAL, "status"))
            return EXIT_USAGE;
        char err[1024];
        return setup_status(&c, err, sizeof(err)) == 0 ? 0 : failed(err);
    }
    if (strcmp(a.command, "cdi") == 0)
        return cmd_cdi(&a, &c);
    return usage_error("unknown command '%s'; commands: enable, disable, status, cdi", a.command);
}
