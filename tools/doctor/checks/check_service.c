/*
 * A systemd service's drop-ins (the .conf files of
 * /etc/systemd/system/NAME.service.d, as vgpu-setup enable --service
 * writes them): LD_PRELOAD of vgpu's libraries that exist, or
 * LD_LIBRARY_PATH with vgpu's directory.
 */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"

#include <ctype.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VARS 64

struct service_env {
    int n;
    char *vars[MAX_VARS]; /* "NAME=value", malloc'd; later assignments replace earlier ones */
};

static void set_var(struct service_env *e, const char *assignment)
{
    size_t n = strcspn(assignment, "=");
    if (!assignment[n])
        return;
    for (int i = 0; i < e->n; i++)
        if (strncmp(e->vars[i], assignment, n + 1) == 0) {
            free(e->vars[i]);
            e->vars[i] = strdup(assignment);
            return;
        }
    if (e->n < MAX_VARS)
        e->vars[e->n++] = strdup(assignment);
}

static const char *get_var(const struct service_env *e, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < e->n; i++)
        if (e->vars[i] && strncmp(e->vars[i], name, n) == 0 && e->vars[i][n] == '=')
            return e->vars[i] + n + 1;
    return NULL;
}

/* An Environment= value's assignments, unquoted as systemd does: "A=b c" 'D=e' F=g. */
static void parse_environment(struct service_env *e, const char *value)
{
    const char *p = value;
    for (;;) {
        char word[8192];
        size_t n = 0;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            return;
        char quote = 0;
        for (; *p && (quote || !isspace((unsigned char)*p)); p++) {
            if (!quote && (*p == '"' || *p == '\'')) {
                quote = *p;
            } else if (quote && *p == quote) {
                quote = 0;
            } else if (*p == '\\' && p[1] && quote != '\'') {
                if (n + 1 < sizeof(word))
                    word[n++] = *++p;
            } else if (n + 1 < sizeof(word)) {
                word[n++] = *p;
            }
        }
        word[n] = '\0';
        set_var(e, word);
    }
}

/* The [Service] Environment= lines of one drop-in. */
static void read_dropin(struct service_env *e, const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[8192];
    bool service = false;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *s = line + strspn(line, " \t");
        if (*s == '[')
            service = strncmp(s, "[Service]", 9) == 0;
        else if (service && strncmp(s, "Environment=", 12) == 0) {
            if (!s[12]) { /* an empty assignment resets the list */
                for (int i = 0; i < e->n; i++)
                    free(e->vars[i]);
                e->n = 0;
            }
            parse_environment(e, s + 12);
        }
    }
    fclose(f);
}

/* How many of LD_PRELOAD's entries are vgpu's; *missing gets the first that does not exist. */
static int preload_vgpu(const struct doc_ctx *c, const char *list, char *missing, size_t len)
{
    int vgpu = 0;
    char *copy = strdup(list), *rest = copy, *entry;
    while (copy && (entry = strsep(&rest, " :"))) {
        if (!*entry)
            continue;
        int which = doc_which_by_name(entry);
        enum doc_lib_kind k = doc_classify(&c->host, entry, which == DOC_NVML ? DOC_NVML : DOC_CUDA);
        if (k == DOC_LIB_VGPU)
            vgpu++;
        else if (k == DOC_LIB_MISSING && !missing[0])
            snprintf(missing, len, "%s", entry);
    }
    free(copy);
    return vgpu;
}

/* The first LD_LIBRARY_PATH directory whose libcuda.so.1 is vgpu, or NULL. */
static const char *library_path_vgpu(const struct doc_ctx *c, const char *list, char *dir, size_t len)
{
    char *copy = strdup(list), *rest = copy, *entry;
    const char *found = NULL;
    while (copy && !found && (entry = strsep(&rest, ":;"))) {
        char path[PATH_MAX * 2];
        snprintf(path, sizeof(path), "%s/%s", entry, doc_libs[DOC_CUDA].soname);
        if (*entry && doc_classify(&c->host, path, DOC_CUDA) == DOC_LIB_VGPU) {
            snprintf(dir, len, "%s", entry);
            found = dir;
        }
    }
    free(copy);
    return found;
}

void doc_check_service(struct doc_ctx *c)
{
    if (!c->service)
        return;
    char name[256], pattern[PATH_MAX * 2 + 16], dir[PATH_MAX];
    snprintf(name, sizeof(name), "%s", c->service);
    size_t n = strlen(name);
    if (n > 8 && strcmp(name + n - 8, ".service") == 0)
        name[n - 8] = '\0';
    snprintf(dir, sizeof(dir), "/etc/systemd/system/%s.service.d", name);
    snprintf(pattern, sizeof(pattern), "%s%s/*.conf", c->host.root, dir);
    glob_t g;
    char fix[sizeof(name) * 2 + 64];
    snprintf(fix, sizeof(fix), "sudo vgpu-setup enable --service %s && sudo systemctl restart %s", name, name);
    if (glob(pattern, 0, NULL, &g) != 0) {
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "service", "%s.service has no drop-in in %s: it starts its "
                        "processes without vgpu", name, dir), "%s", fix);
        return;
    }
    struct service_env e = { 0 };
    for (size_t i = 0; i < g.gl_pathc; i++)
        read_dropin(&e, g.gl_pathv[i]);
    globfree(&g);

    const char *preload = get_var(&e, "LD_PRELOAD"), *libpath = get_var(&e, "LD_LIBRARY_PATH");
    char missing[PATH_MAX] = "", vgpu_dir[PATH_MAX];
    int vgpu = preload ? preload_vgpu(c, preload, missing, sizeof(missing)) : 0;
    const char *via_path = libpath ? library_path_vgpu(c, libpath, vgpu_dir, sizeof(vgpu_dir)) : NULL;
    const char *vulkan = get_var(&e, "OLLAMA_VULKAN");
    c->service_vulkan_off = vulkan && strcmp(vulkan, "0") == 0;
    if (missing[0])
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "service", "%s.service's drop-in preloads %s, which does not "
                        "exist: the loader skips it", name, missing), "%s", fix);
    if (vgpu || via_path) {
        c->service_uses_vgpu = true;
        doc_add(&c->report, DOC_OK, "service", "%s.service's drop-in brings vgpu in: %s%s%s", name,
                vgpu ? "LD_PRELOAD=" : "", vgpu ? preload : "",
                via_path ? (vgpu ? ", and vgpu's directory on LD_LIBRARY_PATH" : "vgpu's directory on LD_LIBRARY_PATH")
                         : "");
    } else if (!missing[0]) {
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "service", "%s.service's drop-ins in %s set neither LD_PRELOAD of "
                        "vgpu's libraries nor LD_LIBRARY_PATH with vgpu's directory: it starts its processes "
                        "without vgpu", name, dir), "%s", fix);
    }
    /* The drop-in is right but the running process predates it. */
    if (c->service_uses_vgpu && c->proc && c->maps_read && !c->preload_has_vgpu && !c->vgpu_mapped[DOC_CUDA] &&
        !c->vgpu_mapped[DOC_NVML])
        doc_fix(doc_add(&c->report, DOC_WARNING, "service", "process %d has no vgpu though %s.service's drop-in "
                        "brings it in: the service was not restarted since", c->proc->pid, name),
                "sudo systemctl daemon-reload && sudo systemctl restart %s", name);
    for (int i = 0; i < e.n; i++)
        free(e.vars[i]);
}
