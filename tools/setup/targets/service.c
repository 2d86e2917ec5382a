/* See service.h. */
#define _GNU_SOURCE
#include "tools/setup/targets/service.h"

#include "common/error.h"
#include "tools/mediatord/config/config.h"
#include "tools/setup/command.h"
#include "tools/setup/record/files.h"
#include "tools/setup/record/record.h"
#include "tools/setup/targets/unit.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void record_id(const char *name, char *id, size_t len)
{
    snprintf(id, len, "service-%s", name);
}

static int daemon_reload(const struct setup_ctx *c, char *err, size_t errlen)
{
    if (!c->systemctl) {
        setup_say("not reloading systemd: --root %s is not the running system (give --systemctl to run one)",
                  c->root);
        return 0;
    }
    const char *argv[] = { c->systemctl, "daemon-reload", NULL };
    if (setup_run(argv, err, errlen) != 0) {
        size_t n = strlen(err);
        snprintf(err + n, errlen - n, "; the drop-in is in place: run `systemctl daemon-reload` once systemd answers");
        return -1;
    }
    return 0;
}

/* systemd applies EnvironmentFile= after Environment=: a variable set there
 * would replace the drop-in's. */
static void warn_env_files(const struct setup_ctx *c, const struct setup_unit *u, const char *var)
{
    for (int i = 0; i < u->nenv_files; i++) {
        const char *file = u->env_files[i] + (u->env_files[i][0] == '-');
        char real[PATH_MAX], *text, err[512];
        size_t len;
        if (setup_path(c, file, real, sizeof(real)) != 0 || setup_read(real, &text, &len, err, sizeof(err)) != 0)
            continue;
        char needle[64];
        snprintf(needle, sizeof(needle), "%s=", var);
        for (char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
            if (p == text || p[-1] == '\n' || p[-1] == ' ' || p[-1] == '\t') {
                setup_warn("%s sets %s in %s (its EnvironmentFile=), which systemd applies after the drop-in's, so "
                           "vgpu's %s is lost; remove it there, or add vgpu's value to it", u->name, var, file, var);
                break;
            }
        free(text);
    }
}

/* The mediator admits a process by its user and groups: say so now if it
 * would refuse the service's (this machine's user database; a DynamicUser=
 * service has no user to check in advance). */
static void check_admission(const struct med_config *conf, const struct setup_unit *u, const char *vgpu)
{
    const char *user = u->user[0] ? u->user : "root";
    struct passwd pw, *found = NULL;
    char buf[4096];
    if (u->dynamic_user || getpwnam_r(user, &pw, buf, sizeof(buf), &found) != 0 || !found)
        return;
    gid_t groups[256];
    int ngroups = 256;
    if (getgrouplist(user, pw.pw_gid, groups, &ngroups) < 0)
        ngroups = 0;
    for (int i = 0; i < conf->nvgpus; i++) {
        const struct med_vgpu_conf *v = &conf->vgpu[i];
        if ((!vgpu || strcmp(v->name, vgpu) == 0) && med_config_admits(v, pw.pw_uid, pw.pw_gid, groups, ngroups))
            return;
    }
    char which[64] = "any vGPU";
    if (vgpu)
        snprintf(which, sizeof(which), "vGPU %s", vgpu);
    setup_warn("%s's user %s (uid %u) is not admitted by %s of %s: the mediator will refuse it; add it to uids = or "
               "gids = of the vGPU's [vgpu.NAME] section", u->name, user, (unsigned)pw.pw_uid, which, conf->path);
}

/* With --mediator: the socket to name, and --vgpu checked against the config. */
static int mediator_settings(const struct setup_ctx *c, const struct setup_unit *u, struct setup_service_opts *o,
                             char *err, size_t errlen)
{
    static struct med_config conf; /* 300 KiB: not on the stack */
    static char socket[sizeof(conf.socket)];
    char path[PATH_MAX], why[1024];
    o->socket = SETUP_DEFAULT_SOCKET;
    if (setup_path(c, c->config, path, sizeof(path)) != 0)
        return vgpu_fail(err, errlen, "path too long: %s%s", c->root, c->config);
    if (access(path, F_OK) != 0 && c->config_given)
        return vgpu_fail(err, errlen, "--config %s: %s: %s", c->config, path, strerror(errno));
    if (access(path, F_OK) != 0) {
        setup_warn("no mediator config at %s: naming the default socket %s%s", path, SETUP_DEFAULT_SOCKET,
                   o->vgpu ? ", and --vgpu is not checked" : "");
        return 0;
    }
    if (med_config_load(path, &conf, why, sizeof(why)) != 0)
        return vgpu_fail(err, errlen, "%s; fix it first (vgpu-mediatord --config %s --check-config)", why, c->config);
    snprintf(socket, sizeof(socket), "%s", conf.socket);
    o->socket = socket;
    if (o->vgpu && !med_config_find(&conf, o->vgpu)) {
        char names[2048] = "";
        for (int i = 0; i < conf.nvgpus; i++)
            snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "", conf.vgpu[i].name);
        return vgpu_fail(err, errlen, "--vgpu %s: %s has no [vgpu.%s]; it has %s", o->vgpu, path, o->vgpu,
                         conf.nvgpus ? names : "none");
    }
    if (o->vgpu && med_config_find(&conf, o->vgpu)->guest)
        return vgpu_fail(err, errlen, "--vgpu %s: a VM's vGPU (guest = yes in %s); its processes run in the VM",
                         o->vgpu, path);
    check_admission(&conf, u, o->vgpu);
    return 0;
}

static void describe(const struct setup_service_opts *o, bool ollama, char *out, size_t len)
{
    snprintf(out, len, "%s", o->symlink ? "LD_LIBRARY_PATH" : "LD_PRELOAD");
#define ADD(fmt, ...) snprintf(out + strlen(out), len - strlen(out), fmt, __VA_ARGS__)
    if (o->mediator)
        ADD(", VGPU_MEDIATOR_SOCKET=%s", o->socket);
    if (o->vgpu)
        ADD(", VGPU_NAME=%s", o->vgpu);
    if (o->devices)
        ADD(", VGPU_VISIBLE_DEVICES=%s", o->devices);
    if (o->memory)
        ADD(", VGPU_MEMORY_LIMIT=%s", o->memory);
    if (o->compute)
        ADD(", VGPU_COMPUTE_SHARE=%s", o->compute);
    if (o->compute_mode)
        ADD(", VGPU_COMPUTE_MODE=%s", o->compute_mode);
    if (o->bar0)
        ADD(", VGPU_BAR0=%s", o->bar0);
    if (o->log)
        ADD(", VGPU_LOG=%s", o->log);
    if (ollama)
        ADD("%s", ", OLLAMA_VULKAN=0");
#undef ADD
}

int setup_enable_service(const struct setup_ctx *c, const char *name, struct setup_service_opts *o,
                         bool allow_missing, char *err, size_t errlen)
{
    struct setup_unit *u = calloc(1, sizeof(*u));
    if (!u)
        return vgpu_fail(err, errlen, "out of memory");
    int rc = -1;
    char *text = NULL;
    if (setup_unit_read(c, name, u, err, errlen) != 0)
        goto out;
    if (u->masked) {
        vgpu_fail(err, errlen, "%s is masked (%s%s is a link to /dev/null); unmask it first (systemctl unmask %s)",
                  name, c->root, u->file, name);
        goto out;
    }
    if (!u->file[0] && !allow_missing) {
        vgpu_fail(err, errlen, "there is no unit %s in %s/etc/systemd/system, /run/systemd/system, "
                  "/usr/local/lib/systemd/system, /usr/lib/systemd/system or /lib/systemd/system; check the name "
                  "(systemctl list-unit-files '%.*s*'), or give --allow-missing-unit to write the drop-in for a unit "
                  "installed later", name, c->root, (int)(strlen(name) - 8), name);
        goto out;
    }
    if (setup_check_libs(c, o->symlink, err, errlen) != 0 ||
        (o->mediator && mediator_settings(c, u, o, err, errlen) != 0))
        goto out;
    warn_env_files(c, u, o->symlink ? "LD_LIBRARY_PATH" : "LD_PRELOAD");
    if (!(text = setup_dropin_text(c, u, o, err, errlen)))
        goto out;

    char id[SETUP_UNIT_NAME_MAX + 16], target[PATH_MAX], real[PATH_MAX];
    record_id(name, id, sizeof(id));
    setup_unit_dropin(name, target, sizeof(target));
    setup_path(c, target, real, sizeof(real));
    int done = setup_install(c, id, target, text, strlen(text), err, errlen);
    if (done < 0)
        goto out;
    char what[2048];
    describe(o, setup_is_ollama(u), what, sizeof(what));
    if (done == SETUP_UNCHANGED)
        setup_say("%s: already enabled, %s unchanged (%s)", name, real, what);
    else
        setup_say("%s: %s %s (%s)", name, done == SETUP_INSTALLED ? "wrote" : "updated", real, what);
    if (daemon_reload(c, err, errlen) != 0)
        goto out;
    if (done != SETUP_UNCHANGED)
        setup_say("restart the service to apply it: systemctl restart %s", name);
    rc = 0;
out:
    free(text);
    free(u);
    return rc;
}

int setup_disable_service(const struct setup_ctx *c, const char *name, char *err, size_t errlen)
{
    char id[SETUP_UNIT_NAME_MAX + 16], target[PATH_MAX], real[PATH_MAX];
    record_id(name, id, sizeof(id));
    setup_unit_dropin(name, target, sizeof(target));
    setup_path(c, target, real, sizeof(real));
    enum setup_before was;
    int done = setup_restore(c, id, &was, err, errlen);
    if (done < 0)
        return -1;
    if (done == 0) {
        setup_say_not_enabled(c, name, real, "systemctl daemon-reload");
        return 0;
    }
    setup_say("%s: %s: %s", name, real, setup_restored_what(was));
    if (daemon_reload(c, err, errlen) != 0)
        return -1;
    setup_say("restart the service to apply it: systemctl restart %s", name);
    return 0;
}
