/* See status.h. */
#define _GNU_SOURCE
#include "tools/setup/status.h"

#include "common/error.h"
#include "tools/setup/record/files.h"
#include "tools/setup/record/record.h"
#include "tools/setup/targets/cdi.h"
#include "tools/setup/targets/system.h"
#include "tools/setup/targets/unit.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The variables a drop-in sets, with the values worth a glance (not the
 * library paths), as "LD_PRELOAD VGPU_NAME=infer". */
static void summarize(const char *real, char *out, size_t len)
{
    char *text, err[512];
    size_t n;
    out[0] = '\0';
    if (setup_read(real, &text, &n, err, sizeof(err)) != 0)
        return;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "Environment=", 12) != 0)
            continue;
        char *words[32];
        int count = setup_unit_words(line + 12, words, 32);
        for (int i = 0; i < count; i++) {
            char *eq = strchr(words[i], '=');
            if (!eq)
                continue;
            bool path = strncmp(words[i], "LD_", 3) == 0;
            snprintf(out + strlen(out), len - strlen(out), "%s%.*s", out[0] ? " " : "",
                     path ? (int)(eq - words[i]) : (int)strlen(words[i]), words[i]);
        }
    }
    free(text);
}

static void report_dropin(const struct setup_ctx *c, const char *name)
{
    char target[PATH_MAX], real[PATH_MAX], id[SETUP_UNIT_NAME_MAX + 16], err[512], settings[1024];
    setup_unit_dropin(name, target, sizeof(target));
    setup_path(c, target, real, sizeof(real));
    snprintf(id, sizeof(id), "service-%s", name);
    struct setup_record r;
    int have = setup_record_read(c, id, &r, err, sizeof(err));
    bool exists = access(real, F_OK) == 0;
    summarize(real, settings, sizeof(settings));
    const char *who = have < 0   ? "vgpu-setup's records cannot be read: run status as root to see who wrote it"
                      : have == 0 ? "not written by vgpu-setup"
                      : !exists ? "written by vgpu-setup, but the file is gone: `vgpu-setup disable` cleans up"
                      : setup_record_intact(c, &r) ? "written by vgpu-setup"
                                                   : "written by vgpu-setup, changed since";
    setup_say("  %s: %s (%s)%s%s", name, real, who, settings[0] ? "; sets " : "", settings);
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Services with a vgpu.conf drop-in in /etc/systemd/system, and those
 * vgpu-setup has a record of, each once, by name. */
static void report_services(const struct setup_ctx *c)
{
    char *names[512];
    int n = 0;
    char dir[PATH_MAX];
    setup_path(c, "/etc/systemd/system", dir, sizeof(dir));
    DIR *dh = opendir(dir);
    struct dirent *de;
    while (dh && (de = readdir(dh)) && n < 512) {
        size_t len = strlen(de->d_name);
        char probe[PATH_MAX];
        if (len < 11 || strcmp(de->d_name + len - 10, ".service.d") != 0)
            continue;
        if ((size_t)snprintf(probe, sizeof(probe), "%s/%s/vgpu.conf", dir, de->d_name) < sizeof(probe) &&
            access(probe, F_OK) == 0)
            names[n++] = strndup(de->d_name, len - 2);
    }
    if (dh)
        closedir(dh);
    setup_state_dir(c, dir, sizeof(dir));
    dh = opendir(dir);
    while (dh && (de = readdir(dh)) && n < 512) {
        size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, "service-", 8) != 0 || len < 18 || strcmp(de->d_name + len - 9, ".manifest") != 0)
            continue;
        char *name = strndup(de->d_name + 8, len - 17);
        bool seen = false;
        for (int i = 0; i < n && name; i++)
            seen = seen || strcmp(names[i], name) == 0;
        if (seen || !name)
            free(name);
        else
            names[n++] = name;
    }
    if (dh)
        closedir(dh);
    qsort(names, (size_t)n, sizeof(*names), by_string);
    setup_say("services:%s", n ? "" : " none has a vgpu drop-in (vgpu-setup enable --service NAME)");
    for (int i = 0; i < n; i++) {
        if (names[i])
            report_dropin(c, names[i]);
        free(names[i]);
    }
}

static void report_system(const struct setup_ctx *c)
{
    char real[PATH_MAX], err[512], *text;
    size_t len;
    setup_path(c, SETUP_LDSO_ENTRY, real, sizeof(real));
    struct setup_record r;
    int have = setup_record_read(c, "system", &r, err, sizeof(err));
    if (setup_read(real, &text, &len, err, sizeof(err)) != 0) {
        setup_say("system: not enabled (no %s; vgpu-setup enable --system)", real);
    } else {
        char dirs[1024] = "";
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            if (line[0] == '/')
                snprintf(dirs + strlen(dirs), sizeof(dirs) - strlen(dirs), "%s%s", dirs[0] ? ", " : "", line);
        setup_say("system: %s names %s (%s)", real, dirs[0] ? dirs : "no directory",
                  have < 0                      ? "vgpu-setup's records cannot be read: run status as root"
                  : have == 0                   ? "not written by vgpu-setup"
                  : setup_record_intact(c, &r) ? "written by vgpu-setup"
                                               : "written by vgpu-setup, changed since");
        free(text);
    }
    setup_system_report(c, setup_say);
}

static void report_cdi(const struct setup_ctx *c)
{
    char real[PATH_MAX], err[512], *text;
    size_t len;
    setup_path(c, "/etc/cdi/vgpu.yaml", real, sizeof(real));
    if (setup_read(real, &text, &len, err, sizeof(err)) != 0) {
        setup_say("containers: no CDI spec at %s (vgpu-setup cdi)", real);
        return;
    }
    char names[1024] = "";
    for (char *p = strstr(text, "\n  - name: \""); p; p = strstr(p + 1, "\n  - name: \"")) {
        p += 12;
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s=%.*s", names[0] ? ", " : "",
                 SETUP_CDI_KIND, (int)strcspn(p, "\""), p);
    }
    setup_say("containers: %s: %s", real, names[0] ? names : "no devices");
    free(text);
}

int setup_status(const struct setup_ctx *c, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    report_services(c);
    report_system(c);
    report_cdi(c);
    return 0;
}
