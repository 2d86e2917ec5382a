/* See unit.h. */
#define _GNU_SOURCE
#include "tools/setup/targets/unit.h"

#include "common/error.h"
#include "tools/setup/record/files.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* systemd's system unit directories that hold files, in its order of
 * precedence (systemd.unit(5)); /lib/systemd/system for systems that have
 * not merged /usr. */
static const char *const unit_dirs[] = {
    "/etc/systemd/system",        "/run/systemd/system",     "/run/systemd/generator",
    "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system",
};
#define NDIRS (sizeof(unit_dirs) / sizeof(*unit_dirs))

int setup_unit_name(const char *arg, char *name, size_t len, char *err, size_t errlen)
{
    static const char allowed[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.@\\";
    static const char *const other_types[] = { ".socket", ".timer", ".target", ".mount", ".path",
                                               ".slice",  ".scope", ".device", ".swap",  ".automount" };
    const char *dot = strrchr(arg, '.');
    for (size_t i = 0; dot && i < sizeof(other_types) / sizeof(*other_types); i++)
        if (strcmp(dot, other_types[i]) == 0)
            return vgpu_fail(err, errlen, "--service %s: vgpu-setup puts services under vgpu, and this is a %s "
                             "unit; name the .service it starts", arg, dot + 1);
    size_t base = dot && strcmp(dot, ".service") == 0 ? (size_t)(dot - arg) : strlen(arg);
    if (base == 0 || arg[0] == '.' || arg[0] == '-' || strspn(arg, allowed) != strlen(arg) ||
        base + sizeof(".service") > len || base + sizeof(".service") > SETUP_UNIT_NAME_MAX)
        return vgpu_fail(err, errlen, "--service %s: not a systemd service name (letters, digits and :-_.@\\, at "
                         "most %d characters, as `systemctl list-units --type=service` shows them)", arg,
                         SETUP_UNIT_NAME_MAX - 9);
    snprintf(name, len, "%.*s.service", (int)base, arg);
    if (name[base - 1] == '@')
        return vgpu_fail(err, errlen, "--service %s: a template; name one of its instances (%.*sNAME.service)",
                         arg, (int)base, arg);
    return 0;
}

void setup_unit_dropin(const char *name, char *out, size_t len)
{
    snprintf(out, len, "/etc/systemd/system/%s.d/vgpu.conf", name);
}

int setup_unit_words(char *value, char **words, int max)
{
    int n = 0;
    char *in = value, *out = value;
    while (*in && n < max) {
        while (*in == ' ' || *in == '\t')
            in++;
        if (!*in)
            break;
        words[n++] = out;
        char quote = 0;
        for (; *in && (quote || (*in != ' ' && *in != '\t')); in++) {
            if (!quote && (*in == '"' || *in == '\'')) {
                quote = *in;
            } else if (quote && *in == quote) {
                quote = 0;
            } else if (*in == '\\' && in[1]) {
                in++;
                *out++ = *in == 'n' ? '\n' : *in == 't' ? '\t' : *in;
            } else if (*in == '%' && in[1] == '%') {
                *out++ = *in++;
            } else {
                *out++ = *in;
            }
        }
        if (*in)
            in++;
        *out++ = '\0';
    }
    return n;
}

static bool names_ollama(char *exec)
{
    char *words[64];
    exec += strspn(exec, "-@:+!|"); /* ExecStart='s prefixes */
    int n = setup_unit_words(exec, words, 64);
    for (int i = 0; i < n; i++) {
        const char *slash = strrchr(words[i], '/');
        if (strcmp(slash ? slash + 1 : words[i], "ollama") == 0)
            return true;
    }
    return false;
}

static void environment(struct setup_unit *u, char *value)
{
    char *words[128];
    int n = setup_unit_words(value, words, 128);
    if (n == 0) { /* an empty Environment= resets what came before */
        u->has_preload = u->has_libpath = false;
        return;
    }
    for (int i = 0; i < n; i++) {
        if (strncmp(words[i], "LD_PRELOAD=", 11) == 0) {
            u->has_preload = true;
            snprintf(u->preload, sizeof(u->preload), "%s", words[i] + 11);
        } else if (strncmp(words[i], "LD_LIBRARY_PATH=", 16) == 0) {
            u->has_libpath = true;
            snprintf(u->libpath, sizeof(u->libpath), "%s", words[i] + 16);
        }
    }
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* One unit file or drop-in, applied over what u already holds. */
static void apply_file(char *text, struct setup_unit *u)
{
    bool service = false;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        /* A trailing backslash continues the line: join in place. */
        size_t n;
        while ((n = strlen(line)) && line[n - 1] == '\\' && save && *save) {
            line[n - 1] = ' ';
            char *next = strtok_r(NULL, "\n", &save);
            if (!next)
                break;
            memmove(line + n, next, strlen(next) + 1);
        }
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            service = strncmp(s, "[Service]", 9) == 0;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!service || !eq)
            continue;
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        if (strcmp(key, "Environment") == 0) {
            environment(u, value);
        } else if (strcmp(key, "ExecStart") == 0) {
            if (!*value)
                u->ollama = false;
            else if (names_ollama(value))
                u->ollama = true;
        } else if (strcmp(key, "User") == 0) {
            snprintf(u->user, sizeof(u->user), "%s", value);
        } else if (strcmp(key, "DynamicUser") == 0) {
            u->dynamic_user = strcmp(value, "yes") == 0 || strcmp(value, "true") == 0 || strcmp(value, "1") == 0 ||
                              strcmp(value, "on") == 0;
        } else if (strcmp(key, "EnvironmentFile") == 0) {
            if (!*value)
                u->nenv_files = 0;
            else if (u->nenv_files < SETUP_MAX_ENV_FILES)
                snprintf(u->env_files[u->nenv_files++], PATH_MAX, "%s", value);
        }
    }
}

static int apply_path(const struct setup_ctx *c, const char *target, struct setup_unit *u, char *err, size_t errlen)
{
    char real[PATH_MAX], *text;
    size_t len;
    if (setup_path(c, target, real, sizeof(real)) != 0)
        return vgpu_fail(err, errlen, "path too long: %s%s", c->root, target);
    /* A unit file may be a link (an alias); an absolute one points into the target system. */
    char link[PATH_MAX];
    ssize_t n = readlink(real, link, sizeof(link) - 1);
    if (n > 0 && link[0] == '/') {
        link[n] = '\0';
        if (strcmp(link, "/dev/null") == 0)
            return 0;
        if (setup_path(c, link, real, sizeof(real)) != 0)
            return vgpu_fail(err, errlen, "path too long: %s%s", c->root, link);
    }
    int e = setup_read(real, &text, &len, err, errlen);
    if (e == -ENOENT)
        return 0;
    if (e != 0)
        return -1;
    apply_file(text, u);
    free(text);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(strrchr(*(char *const *)a, '/'), strrchr(*(char *const *)b, '/'));
}

/* The drop-ins of unit (a name with ".d" added), each file name once: the
 * first directory's wins, as systemd has it; applied in file name order. */
static int apply_dropins(const struct setup_ctx *c, const char *unit, struct setup_unit *u, char *err, size_t errlen)
{
    char *found[256];
    int nfound = 0;
    for (size_t d = 0; d < NDIRS; d++) {
        char dir[PATH_MAX];
        if ((size_t)snprintf(dir, sizeof(dir), "%s%s/%s.d", c->root, unit_dirs[d], unit) >= sizeof(dir))
            continue;
        DIR *dh = opendir(dir);
        if (!dh)
            continue;
        struct dirent *de;
        while ((de = readdir(dh)) && nfound < 256) {
            size_t n = strlen(de->d_name);
            if (n < 6 || strcmp(de->d_name + n - 5, ".conf") != 0 || strcmp(de->d_name, "vgpu.conf") == 0)
                continue;
            bool seen = false;
            for (int i = 0; i < nfound; i++)
                seen = seen || strcmp(strrchr(found[i], '/') + 1, de->d_name) == 0;
            if (!seen && asprintf(&found[nfound], "%s/%s.d/%s", unit_dirs[d], unit, de->d_name) > 0)
                nfound++;
        }
        closedir(dh);
    }
    qsort(found, (size_t)nfound, sizeof(*found), by_name);
    int rc = 0;
    for (int i = 0; i < nfound; i++) {
        if (rc == 0)
            rc = apply_path(c, found[i], u, err, errlen);
        free(found[i]);
    }
    return rc;
}

/* The unit file of name: the first directory's.  0 with u->file set (or
 * left empty), or -1 with err. */
static int find_unit_file(const struct setup_ctx *c, const char *name, struct setup_unit *u, char *err,
                          size_t errlen)
{
    for (size_t d = 0; d < NDIRS; d++) {
        char real[PATH_MAX], link[PATH_MAX];
        if ((size_t)snprintf(real, sizeof(real), "%s%s/%s", c->root, unit_dirs[d], name) >= sizeof(real))
            return vgpu_fail(err, errlen, "path too long: %s", real);
        struct stat st;
        if (lstat(real, &st) != 0)
            continue;
        snprintf(u->file, sizeof(u->file), "%s/%s", unit_dirs[d], name);
        ssize_t n = readlink(real, link, sizeof(link) - 1);
        if (n > 0) {
            link[n] = '\0';
            u->masked = strcmp(link, "/dev/null") == 0;
        }
        return 0;
    }
    return 0;
}

int setup_unit_read(const struct setup_ctx *c, const char *name, struct setup_unit *u, char *err, size_t errlen)
{
    memset(u, 0, sizeof(*u));
    snprintf(u->name, sizeof(u->name), "%s", name);
    if (find_unit_file(c, name, u, err, errlen) != 0)
        return -1;
    /* An instance (getty@tty1.service) without a file of its own is its template's. */
    char template[SETUP_UNIT_NAME_MAX] = "";
    const char *at = strchr(name, '@');
    if (at)
        snprintf(template, sizeof(template), "%.*s@.service", (int)(at - name), name);
    if (!u->file[0] && template[0] && find_unit_file(c, template, u, err, errlen) != 0)
        return -1;
    if (u->file[0] && !u->masked && apply_path(c, u->file, u, err, errlen) != 0)
        return -1;
    if (template[0] && apply_dropins(c, template, u, err, errlen) != 0)
        return -1;
    return apply_dropins(c, name, u, err, errlen);
}
