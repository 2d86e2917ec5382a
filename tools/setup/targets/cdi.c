/* See cdi.h. */
#define _GNU_SOURCE
#include "tools/setup/targets/cdi.h"

#include "common/error.h"
#include "tools/mediatord/config/config.h"
#include "tools/setup/record/files.h"
#include "tools/setup/gpus.h"
#include "tools/setup/text.h"
#include "common/contract/settings/settings.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Device files every CUDA process opens, whichever GPU it uses. */
static const char *const control_nodes[] = { "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools" };

/* Where a remote vGPU's container finds the path /dev/nvidiactl, which is
 * no device: /dev/null, bound without device access (nodev), so that
 * whatever opens it is refused.  Frameworks look for the path before they
 * load a driver at all (JAX's CUDA backend is skipped without one of
 * /dev/nvidia0, /dev/nvidiactl, /dev/dxg); the guest's driver is vgpu's. */
#define REMOTE_MARKER_HOST "/dev/null"
#define REMOTE_MARKER "/dev/nvidiactl"

/* One device of the spec: a vGPU. */
struct cdi_device {
    char name[VGPU_NAME_LEN];
    bool remote; /* its containers hold no GPU: an executor of the mediator's runs their calls */
    bool container; /* made for containers (containers = N): bound to its container by the hook */
    int ngpus;
    const char *tokens[VGPU_MAX_DEVICES];
    struct setup_gpu gpu[VGPU_MAX_DEVICES];
};

/* A CDI device name begins and ends with a letter or a digit (CDI spec,
 * "CDI Devices"); a vGPU's may also begin or end with '_', '-' or '.'. */
static bool cdi_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* A YAML double-quoted scalar: every value here is a path, a name or an
 * assignment, but none is trusted to be plain. */
static void quoted(struct setup_text *t, const char *s)
{
    setup_text_add(t, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            setup_text_add(t, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            setup_text_add(t, "\\x%02x", ch);
        else
            setup_text_add(t, "%c", ch);
    }
    setup_text_add(t, "\"");
}

static void env_item(struct setup_text *t, const char *indent, const char *name, const char *value)
{
    char *s = NULL;
    if (asprintf(&s, "%s=%s", name, value) < 0) {
        t->failed = true;
        return;
    }
    setup_text_add(t, "%s- ", indent);
    quoted(t, s);
    setup_text_add(t, "\n");
    free(s);
}

static void node_item(struct setup_text *t, const char *indent, const char *path)
{
    setup_text_add(t, "%s- path: ", indent);
    quoted(t, path);
    setup_text_add(t, "\n");
}

/* A read-only bind mount of host path at inside (the same path where the
 * symlink directory's links are relative, ../libvgpu-cuda.so, and
 * LD_PRELOAD names paths). */
static void mount_at(struct setup_text *t, const char *indent, const char *path, const char *inside, bool dir)
{
    setup_text_add(t, "%s- hostPath: ", indent);
    quoted(t, path);
    setup_text_add(t, "\n%s  containerPath: ", indent);
    quoted(t, inside);
    setup_text_add(t, "\n%s  options: [\"ro\", \"nosuid\", \"nodev\", \"%s\"]\n", indent, dir ? "rbind" : "bind");
}

static void mount_item(struct setup_text *t, const char *path, bool dir)
{
    mount_at(t, "    ", path, path, dir);
}

/* The devices from the mediator's config: every vGPU of this host's
 * processes (a guest's vGPU serves a VM, whose processes are not here). */
static int from_config(const struct setup_ctx *c, struct med_config *conf, struct cdi_device *dev, int *ndev,
                       char *err, size_t errlen)
{
    char path[PATH_MAX], why[1024];
    if (setup_path(c, c->config, path, sizeof(path)) != 0)
        return vgpu_fail(err, errlen, "path too long: %s%s", c->root, c->config);
    if (med_config_load(path, conf, why, sizeof(why)) != 0)
        return vgpu_fail(err, errlen, "%s; fix it (vgpu-mediatord --config %s --check-config), or name another with "
                         "--config, or write a spec without a mediator with --standalone", why, c->config);
    *ndev = 0;
    for (int i = 0; i < conf->nvgpus; i++) {
        const struct med_vgpu_conf *v = &conf->vgpu[i];
        if (v->guest) {
            setup_note("vGPU %s is a VM's (guest = yes), not a container's: left out of the spec", v->name);
            continue;
        }
        if (!cdi_name(v->name))
            return vgpu_fail(err, errlen, "%s:%d: vGPU %s cannot be a CDI device: a CDI device name begins and ends "
                             "with a letter or a digit; rename it", path, v->line, v->name);
        struct cdi_device *d = &dev[(*ndev)++];
        snprintf(d->name, sizeof(d->name), "%s", v->name);
        d->remote = v->remote;
        d->container = v->cls[0] != '\0';
        d->ngpus = v->ndev;
        for (int k = 0; k < v->ndev; k++)
            d->tokens[k] = v->devices[k];
    }
    if (*ndev == 0)
        return vgpu_fail(err, errlen, "%s has no vGPU for this host's containers%s; add a [vgpu.NAME] section "
                         "(docs/reference/mediator.md)", path, conf->nvgpus ? " (all are a VM's)" : "");
    return 0;
}

/* The directory of the mediator's socket, which containers get mounted:
 * one of the mediator's own, never a directory the system shares (it would
 * hide the container's own /run or /tmp).  0, or -1 with err. */
static int socket_dir(const struct med_config *conf, char *dir, size_t len, char *err, size_t errlen)
{
    static const char *const shared[] = { "", "/run", "/var/run", "/tmp", "/var/tmp", "/dev", "/dev/shm",
                                          "/etc", "/var", "/usr", "/home", "/root", "/var/lib" };
    const char *slash = strrchr(conf->socket, '/');
    snprintf(dir, len, "%.*s", (int)(slash - conf->socket), conf->socket);
    for (size_t i = 0; i < sizeof(shared) / sizeof(*shared); i++)
        if (strcmp(dir, shared[i]) == 0)
            return vgpu_fail(err, errlen, "%s: the mediator's socket %s is in %s, which a container cannot be given "
                             "without hiding its own; give the socket a directory of its own (socket = "
                             "/run/vgpu/mediator.sock)", conf->path, conf->socket, dir[0] ? dir : "/");
    return 0;
}

static void warn_missing_node(const struct setup_ctx *c, const char *node)
{
    char real[PATH_MAX];
    struct stat st;
    if (setup_path(c, node, real, sizeof(real)) == 0 && stat(real, &st) != 0)
        setup_warn("%s does not exist (yet): a container given this spec fails to start until it does; the driver "
                   "creates it on first use (`nvidia-modprobe -u -c 0` creates it now)", real);
}

static char *spec_text(const struct setup_ctx *c, const struct setup_cdi_opts *o, const struct med_config *conf,
                       const char *sockdir, const struct cdi_device *dev, int ndev)
{
    struct setup_text t = { 0 };
    char cuda[PATH_MAX + 32], nvml[PATH_MAX + 32], preload[2 * PATH_MAX + 80];
    snprintf(cuda, sizeof(cuda), "%s/%s", c->libdir, SETUP_CUDA_LIB);
    snprintf(nvml, sizeof(nvml), "%s/%s", c->libdir, SETUP_NVML_LIB);
    snprintf(preload, sizeof(preload), "%s %s", cuda, nvml);
    setup_text_add(&t,
                   "# Container Device Interface spec for vgpu: one device per vGPU (docs/guide/containers.md,\n"
                   "# \"A vGPU for a container: CDI\"), written by vgpu-setup cdi%s%s.\n"
                   "# Run it again after changing %s.  With the NVIDIA Container Toolkit's spec:\n"
                   "#   docker run --device nvidia.com/gpu=all --device %s=%s ...\n"
                   "# A remote vGPU's device (remote = yes) goes alone: its containers hold no GPU, and its\n"
                   "# /dev/nvidiactl (/dev/null) would hide the real one of another device.\n",
                   o->standalone ? " --standalone" : " from ", o->standalone ? "" : c->config,
                   o->standalone ? "the vGPU's settings" : "that file", SETUP_CDI_KIND, dev[0].name);
    setup_text_add(&t, "cdiVersion: \"%s\"\nkind: \"%s\"\ncontainerEdits:\n  env:\n", SETUP_CDI_VERSION,
                   SETUP_CDI_KIND);
    if (o->symlink)
        env_item(&t, "    ", "LD_LIBRARY_PATH", c->linkdir);
    else
        env_item(&t, "    ", "LD_PRELOAD", preload);
    /* Named, so that a container whose mediator is away is refused, not run without limits. */
    env_item(&t, "    ", "VGPU_MEDIATOR_SOCKET", o->standalone ? "none" : conf->socket);
    setup_text_add(&t, "  mounts:\n");
    mount_item(&t, cuda, false);
    mount_item(&t, nvml, false);
    mount_item(&t, c->linkdir, true);
    /* The directory, not the socket: a restarted mediator makes a new socket there. */
    if (!o->standalone)
        mount_item(&t, sockdir, true);
    setup_text_add(&t, "devices:\n");
    for (int i = 0; i < ndev; i++) {
        setup_text_add(&t, "  - name: ");
        quoted(&t, dev[i].name);
        setup_text_add(&t, "\n    containerEdits:\n      env:\n");
        if (o->standalone) {
            /* UUIDs: a container that sees only some GPUs numbers them from 0. */
            char list[VGPU_MAX_DEVICES * 100] = "";
            for (int k = 0; k < dev[i].ngpus; k++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? "," : "", dev[i].gpu[k].uuid);
            env_item(&t, "        ", "VGPU_VISIBLE_DEVICES", list);
            if (o->memory)
                env_item(&t, "        ", "VGPU_MEMORY_LIMIT", o->memory);
            if (o->compute)
                env_item(&t, "        ", "VGPU_COMPUTE_SHARE", o->compute);
            if (o->compute_mode)
                env_item(&t, "        ", "VGPU_COMPUTE_MODE", o->compute_mode);
        } else {
            env_item(&t, "        ", "VGPU_NAME", dev[i].name);
        }
        if (dev[i].container) {
            /* Before the container's first process: it is admitted by its cgroup from the start. */
            setup_text_add(&t, "      hooks:\n        - hookName: createRuntime\n          path: ");
            quoted(&t, o->hook);
            setup_text_add(&t, "\n          args: [\"vgpu-cdi-hook\", \"bind\", \"--vgpu\", ");
            quoted(&t, dev[i].name);
            setup_text_add(&t, ", \"--socket\", ");
            quoted(&t, conf->socket);
            setup_text_add(&t, "]\n");
        }
        if (dev[i].remote) {
            setup_text_add(&t, "      mounts:\n");
            mount_at(&t, "        ", REMOTE_MARKER_HOST, REMOTE_MARKER, false);
            continue;
        }
        setup_text_add(&t, "      deviceNodes:\n");
        for (size_t k = 0; k < sizeof(control_nodes) / sizeof(*control_nodes); k++)
            node_item(&t, "        ", control_nodes[k]);
        for (int k = 0; k < dev[i].ngpus; k++) {
            char node[32];
            snprintf(node, sizeof(node), "/dev/nvidia%u", dev[i].gpu[k].minor);
            node_item(&t, "        ", node);
        }
    }
    return setup_text_take(&t);
}

int setup_cdi(const struct setup_ctx *c, const struct setup_cdi_opts *o, char *err, size_t errlen)
{
    static struct med_config conf; /* 300 KiB: not on the stack; this run's only config */
    static struct cdi_device dev[MED_MAX_VGPUS];
    char sockdir[sizeof(conf.socket)] = "";
    int ndev = 0;
    if (o->standalone) {
        if (!cdi_name(o->vgpu))
            return vgpu_fail(err, errlen, "--vgpu %s: a CDI device name begins and ends with a letter or a digit, "
                             "with letters, digits, '_', '-' or '.' between", o->vgpu);
        static char list[1024];
        static char *fields[VGPU_MAX_DEVICES];
        snprintf(list, sizeof(list), "%s", o->devices);
        struct cdi_device *d = &dev[ndev++];
        snprintf(d->name, sizeof(d->name), "%s", o->vgpu);
        d->ngpus = vgpu_split_list(list, fields, VGPU_MAX_DEVICES);
        for (int k = 0; k < d->ngpus; k++)
            d->tokens[k] = fields[k];
    } else if (from_config(c, &conf, dev, &ndev, err, errlen) != 0 ||
               socket_dir(&conf, sockdir, sizeof(sockdir), err, errlen) != 0) {
        return -1;
    }
    for (int i = 0; i < ndev; i++)
        if (setup_gpus_resolve(dev[i].tokens, dev[i].ngpus, dev[i].gpu, err, errlen) != 0)
            return -1;

    char *text = spec_text(c, o, &conf, sockdir, dev, ndev);
    if (!text)
        return vgpu_fail(err, errlen, "out of memory");
    int rc = 0;
    if (strcmp(o->output, "-") == 0) {
        fputs(text, stdout);
    } else {
        char real[PATH_MAX];
        if (setup_path(c, o->output, real, sizeof(real)) != 0)
            rc = vgpu_fail(err, errlen, "path too long: %s%s", c->root, o->output);
        else if (setup_make_parents(real, err, errlen) != 0 ||
                 setup_write_atomic(real, text, strlen(text), NULL, err, errlen) != 0)
            rc = -1;
        if (rc == 0) {
            setup_say("wrote %s: %d vGPU device(s) of kind %s:", real, ndev, SETUP_CDI_KIND);
            for (int i = 0; i < ndev; i++)
                setup_say("  --device %s=%s", SETUP_CDI_KIND, dev[i].name);
        }
    }
    free(text);
    if (rc != 0)
        return -1;
    bool local = false;
    for (int i = 0; i < ndev; i++)
        local |= !dev[i].remote;
    for (size_t i = 0; local && i < sizeof(control_nodes) / sizeof(*control_nodes); i++)
        warn_missing_node(c, control_nodes[i]);
    for (int i = 0; i < ndev; i++)
        for (int k = 0; k < (dev[i].remote ? 0 : dev[i].ngpus); k++) {
            bool warned = false; /* vGPUs share GPUs: one warning per device file */
            for (int j = 0; j <= i && !warned; j++)
                for (int l = 0; l < (j < i ? (dev[j].remote ? 0 : dev[j].ngpus) : k) && !warned; l++)
                    warned = dev[j].gpu[l].minor == dev[i].gpu[k].minor;
            char node[32];
            snprintf(node, sizeof(node), "/dev/nvidia%u", dev[i].gpu[k].minor);
            if (!warned)
                warn_missing_node(c, node);
        }
    return 0;
}
