/* vgpu-mediatord's configuration file; see config.h and docs/reference/mediator.md. */
#define _GNU_SOURCE
#include "tools/mediatord/config/config.h"

#include "tools/mediatord/config/trusted_path.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <ini.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a parse has seen so far: inih's reader and handler share it. */
struct parse {
    struct med_config *c;
    FILE *file;
    int line;               /* the line inih was last given */
    bool in_mediator;       /* [mediator] is the current section */
    struct med_vgpu_conf *v; /* the current [vgpu.NAME], or NULL */
    bool seen_mediator_key[14];
    char err[1024];         /* the first error */
};

static int error_at(struct parse *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int error_at(struct parse *p, int line, const char *fmt, ...)
{
    if (p->err[0])
        return 0;
    int n = snprintf(p->err, sizeof(p->err), "%s:%d: ", p->c->path, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, sizeof(p->err) - (size_t)n, fmt, ap);
    va_end(ap);
    return 0; /* inih: stop calling us useful names, report this line */
}

bool med_config_valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= VGPU_NAME_LEN)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
            return false;
    return true;
}

/* Sections are seen here, in the reader, so an empty one is seen too. */
static void section(struct parse *p, char *text)
{
    char *end = strchr(text, ']');
    if (!end) {
        error_at(p, p->line, "a section header needs its closing ']'");
        return;
    }
    *end = '\0';
    const char *rest = end + 1 + strspn(end + 1, " \t\r\n");
    if (*rest && *rest != ';' && *rest != '#') {
        error_at(p, p->line, "[%s] is followed by \"%.40s\" on its line; a key goes on a line of its own", text, rest);
        return;
    }
    p->in_mediator = false;
    p->v = NULL;
    if (strcmp(text, "mediator") == 0) {
        p->in_mediator = true;
        return;
    }
    if (strncmp(text, "vgpu.", 5) != 0) {
        error_at(p, p->line, "unknown section [%s]; sections are [mediator] and [vgpu.NAME]", text);
        return;
    }
    const char *name = text + 5;
    if (!med_config_valid_name(name)) {
        error_at(p, p->line, "[vgpu.%s]: a vGPU name is 1 to %d letters, digits, '_', '-' or '.'", name,
                 VGPU_NAME_LEN - 1);
        return;
    }
    struct med_config *c = p->c;
    const struct med_vgpu_conf *same = med_config_find(c, name);
    if (same) {
        error_at(p, p->line, "vGPU %s is defined twice (first at line %d)", name, same->line);
        return;
    }
    if (c->nvgpus == MED_MAX_VGPUS) {
        error_at(p, p->line, "more than %d vGPUs", MED_MAX_VGPUS);
        return;
    }
    p->v = &c->vgpu[c->nvgpus++];
    memset(p->v, 0, sizeof(*p->v));
    snprintf(p->v->name, sizeof(p->v->name), "%.*s", VGPU_NAME_LEN - 1, name);
    p->v->line = p->line;
    p->v->compute = 100;
    p->v->max_executors = MED_DEFAULT_EXECUTORS;
    p->v->vm_pinned = MED_DEFAULT_VM_PINNED;
}

/*
 * inih's reader: one line at a time, counted.  Leading blanks are dropped,
 * so an indented key is a key (inih would take it for the continuation of
 * the previous value); section headers are handled here.
 */
static char *reader(char *str, int num, void *stream)
{
    struct parse *p = stream;
    char buf[1024];
    if (!fgets(buf, sizeof(buf), p->file))
        return NULL;
    p->line++;
    size_t len = strlen(buf);
    if (len == sizeof(buf) - 1 && buf[len - 1] != '\n') {
        error_at(p, p->line, "line longer than %zu characters", sizeof(buf) - 2);
        int ch;
        while ((ch = fgetc(p->file)) != EOF && ch != '\n')
            ;
    }
    char *s = buf;
    if (p->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
        s += 3; /* a UTF-8 byte order mark */
    while (*s == ' ' || *s == '\t')
        s++;
    if ((int)strlen(s) >= num) {
        error_at(p, p->line, "line longer than %d characters", num - 2);
        s[num - 2] = '\n';
        s[num - 1] = '\0';
    }
    if (*s == '[') {
        char header[1024];
        snprintf(header, sizeof(header), "%s", s + 1);
        section(p, header);
        strcpy(str, "\n"); /* inih sees a blank line: the section is ours */
        return str;
    }
    strcpy(str, s);
    return str;
}

/* ---- values ---- */

static bool parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = { "yes", "true", "on", "1" }, *const no[] = { "no", "false", "off", "0" };
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return *out = true, true;
        if (strcasecmp(v, no[i]) == 0)
            return *out = false, true;
    }
    return false;
}

static bool parse_uint(const char *v, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)*v))
        return false;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || *end || n > max)
        return false;
    *out = n;
    return true;
}

static bool user_id(const char *v, uid_t *out)
{
    unsigned long n;
    if (parse_uint(v, 0xfffffffeul, &n))
        return *out = (uid_t)n, true;
    struct passwd pw, *r = NULL;
    char buf[4096];
    if (getpwnam_r(v, &pw, buf, sizeof(buf), &r) != 0 || !r)
        return false;
    *out = r->pw_uid;
    return true;
}

static bool group_id(const char *v, gid_t *out)
{
    unsigned long n;
    if (parse_uint(v, 0xfffffffeul, &n))
        return *out = (gid_t)n, true;
    struct group gr, *r = NULL;
    char buf[4096];
    if (getgrnam_r(v, &gr, buf, sizeof(buf), &r) != 0 || !r)
        return false;
    *out = r->gr_gid;
    return true;
}

/* key = a list of users (or groups) into out, at most MED_MAX_IDS; *n is set. */
static int ids(struct parse *p, const char *key, const char *value, bool users, void *out, int *n)
{
    char buf[1024];
    char *fields[MED_MAX_IDS];
    snprintf(buf, sizeof(buf), "%s", value);
    int count = vgpu_split_list(buf, fields, MED_MAX_IDS);
    if (count <= 0)
        return error_at(p, p->line, "%s = %s: a comma-separated list of %s (at most %d)", key, value,
                        users ? "user names or uids" : "group names or gids", MED_MAX_IDS);
    for (int i = 0; i < count; i++) {
        bool ok = users ? user_id(fields[i], &((uid_t *)out)[i]) : group_id(fields[i], &((gid_t *)out)[i]);
        if (!ok)
            return error_at(p, p->line, "%s: no such %s: %s", key, users ? "user" : "group", fields[i]);
    }
    *n = count;
    return 1;
}

/* "500ms", "1s", "1.5s", or milliseconds; 0 (off) or 100 ms to a minute. */
static bool parse_interval(const char *v, unsigned *ms)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)*v))
        return false;
    double n = strtod(v, &end);
    if (errno)
        return false;
    if (strcmp(end, "s") == 0)
        n *= 1000;
    else if (*end && strcmp(end, "ms") != 0)
        return false;
    if (n != 0 && (n < 100 || n > MED_MAX_WATCH_INTERVAL_MS))
        return false;
    *ms = (unsigned)n;
    return true;
}

/* "64M + 2%", "64M", "2%" or "0": bytes, a percent of the quota, or both. */
static bool parse_tolerance(const char *v, uint64_t *bytes, unsigned *percent)
{
    char buf[128];
    char *parts[3];
    snprintf(buf, sizeof(buf), "%s", v);
    for (char *c = buf; *c; c++)
        if (*c == '+')
            *c = ',';
    int n = vgpu_split_list(buf, parts, 2);
    bool have_bytes = false, have_percent = false;
    *bytes = 0;
    *percent = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(parts[i]);
        unsigned long pc;
        if (len > 1 && parts[i][len - 1] == '%') {
            parts[i][len - 1] = '\0';
            if (have_percent || !parse_uint(parts[i], 100, &pc))
                return false;
            *percent = (unsigned)pc;
            have_percent = true;
        } else if (!have_bytes && (strcmp(parts[i], "0") == 0 || vgpu_parse_size(parts[i], bytes) == 0)) {
            have_bytes = true;
        } else {
            return false;
        }
    }
    return n > 0;
}

static bool parse_enforce(const char *v, bool *kill)
{
    if (strcmp(v, "kill") == 0 || strcmp(v, "report") == 0)
        return *kill = v[0] == 'k', true;
    return false;
}

/* ---- keys ---- */

static int mediator_key(struct parse *p, const char *name, const char *value)
{
    static const char *const keys[] = { "socket",         "socket_mode",    "socket_owner",    "socket_group",
                                        "state_dir",      "metrics",        "oversubscribe",   "max_connections",
                                        "max_connections_per_uid",          "watch_interval",  "watch_tolerance",
                                        "enforce",        "exempt_uids",    "exempt_gids" };
    _Static_assert(sizeof(keys) / sizeof(*keys) == sizeof(p->seen_mediator_key), "a seen flag for each key");
    struct med_config *c = p->c;
    int k = -1;
    for (int i = 0; i < (int)(sizeof(keys) / sizeof(*keys)); i++)
        if (strcmp(name, keys[i]) == 0)
            k = i;
    if (k < 0)
        return error_at(p, p->line, "unknown key %s in [mediator]; known: socket, socket_mode, socket_owner, "
                        "socket_group, state_dir, metrics, oversubscribe, max_connections, max_connections_per_uid, "
                        "watch_interval, watch_tolerance, enforce, exempt_uids, exempt_gids", name);
    if (p->seen_mediator_key[k])
        return error_at(p, p->line, "%s is set twice in [mediator]", name);
    p->seen_mediator_key[k] = true;
    unsigned long n;
    switch (k) {
    case 0:
        if (value[0] != '/' || strlen(value) >= sizeof(c->socket))
            return error_at(p, p->line, "socket = %s: an absolute path of at most %zu characters", value,
                            sizeof(c->socket) - 1);
        snprintf(c->socket, sizeof(c->socket), "%s", value);
        break;
    case 1: {
        char *end;
        n = strtoul(value, &end, 8);
        if (!*value || *end || n > 0777)
            return error_at(p, p->line, "socket_mode = %s: an octal mode such as 0660", value);
        c->socket_mode = (mode_t)n;
        break;
    }
    case 2:
        if (!user_id(value, &c->socket_uid))
            return error_at(p, p->line, "socket_owner = %s: no such user", value);
        break;
    case 3:
        if (!group_id(value, &c->socket_gid))
            return error_at(p, p->line, "socket_group = %s: no such group", value);
        break;
    case 4:
        if (value[0] != '/' || strlen(value) >= sizeof(c->state_dir) - 64)
            return error_at(p, p->line, "state_dir = %s: an absolute path", value);
        snprintf(c->state_dir, sizeof(c->state_dir), "%s", value);
        break;
    case 5:
        if (!strchr(value, ':') || strlen(value) >= sizeof(c->metrics))
            return error_at(p, p->line, "metrics = %s: HOST:PORT, such as 127.0.0.1:9400", value);
        snprintf(c->metrics, sizeof(c->metrics), "%s", value);
        break;
    case 6:
        if (!parse_bool(value, &c->oversubscribe))
            return error_at(p, p->line, "oversubscribe = %s: yes or no", value);
        break;
    case 7:
    case 8:
        if (!parse_uint(value, 1 << 24, &n) || n == 0)
            return error_at(p, p->line, "%s = %s: a number of connections, 1 to %d", name, value, 1 << 24);
        *(k == 7 ? &c->max_connections : &c->max_connections_per_uid) = (int)n;
        break;
    case 9:
        if (!parse_interval(value, &c->watch_interval_ms))
            return error_at(p, p->line, "watch_interval = %s: 0 (no watch), or 100ms to 60s, such as 500ms or 1s",
                            value);
        break;
    case 10:
        if (!parse_tolerance(value, &c->watch_tolerance_bytes, &c->watch_tolerance_percent))
            return error_at(p, p->line, "watch_tolerance = %s: a size, a percent of the quota, or both, such as "
                            "64M + 2%%", value);
        break;
    case 11:
        if (!parse_enforce(value, &c->kill_unadmitted))
            return error_at(p, p->line, "enforce = %s: report or kill", value);
        break;
    case 12:
        return ids(p, name, value, true, c->exempt_uids, &c->nexempt_uids);
    case 13:
        return ids(p, name, value, false, c->exempt_gids, &c->nexempt_gids);
    }
    return 1;
}

/* executor_user = NAME (or a uid): the account, its groups; never root. */
static int executor_user(struct parse *p, struct med_vgpu_conf *v, const char *value)
{
    struct passwd pw, *r = NULL;
    char buf[4096];
    unsigned long n;
    int e = parse_uint(value, 0xfffffffeul, &n) ? getpwuid_r((uid_t)n, &pw, buf, sizeof(buf), &r)
                                                : getpwnam_r(value, &pw, buf, sizeof(buf), &r);
    if (e != 0 || !r)
        return error_at(p, p->line, "executor_user: no such user: %s", value);
    if (r->pw_uid == 0)
        return error_at(p, p->line, "executor_user = %s: an executor never runs as root", value);
    int ngroups = MED_MAX_IDS;
    if (getgrouplist(r->pw_name, r->pw_gid, v->executor_groups, &ngroups) < 0)
        return error_at(p, p->line, "executor_user = %s belongs to more than %d groups", value, MED_MAX_IDS);
    v->has_executor_user = true;
    v->executor_uid = r->pw_uid;
    v->executor_gid = r->pw_gid;
    v->executor_ngroups = ngroups;
    return 1;
}

/* cgroups = PATH, ...: absolute cgroup v2 paths, never the root (which
 * holds every process), kept without a trailing '/'. */
static int cgroups(struct parse *p, struct med_vgpu_conf *v, const char *value)
{
    char buf[1024];
    char *fields[MED_MAX_CGROUPS + 1];
    snprintf(buf, sizeof(buf), "%s", value);
    int count = vgpu_split_list(buf, fields, MED_MAX_CGROUPS + 1);
    if (count <= 0 || count > MED_MAX_CGROUPS)
        return error_at(p, p->line, "cgroups = %s: cgroup v2 paths as /proc/PID/cgroup shows them (its 0:: line), "
                        "comma-separated, at most %d", value, MED_MAX_CGROUPS);
    for (int i = 0; i < count; i++) {
        char *f = fields[i];
        size_t n = strlen(f);
        while (n > 1 && f[n - 1] == '/')
            f[--n] = '\0';
        if (f[0] != '/' || n < 2 || n >= VGPU_CGROUP_LEN || med_cgroup_outside(f) || strstr(f, "//"))
            return error_at(p, p->line, "cgroups: \"%s\" is not a cgroup below the root, such as "
                            "/kubepods.slice/kubepods-pod1234.slice or /system.slice/train.service", f);
        snprintf(v->cgroups[i], sizeof(v->cgroups[i]), "%s", f);
    }
    v->ncgroups = count;
    return 1;
}

static int vgpu_key(struct parse *p, const char *name, const char *value)
{
    struct med_vgpu_conf *v = p->v;
    const struct {
        const char *key;
        int *line;
    } keys[] = { { "devices", &v->devices_line }, { "memory", &v->memory_line }, { "compute", &v->compute_line },
                 { "compute_mode", &v->compute_mode_line }, { "uids", &v->uids_line }, { "gids", &v->gids_line },
                 { "guest", &v->guest_line }, { "enforce", &v->enforce_line }, { "remote", &v->remote_line },
                 { "executor_user", &v->executor_user_line }, { "vm_channels", &v->vm_channels_line },
                 { "vm_pinned", &v->vm_pinned_line }, { "cgroups", &v->cgroups_line },
                 { "containers", &v->containers_line }, { "max_executors", &v->max_executors_line },
                 { "pinned", &v->pinned_line },
                 { "executor_cgroup", &v->executor_cgroup_line } };
    int *line = NULL;
    for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
        if (strcmp(name, keys[i].key) == 0)
            line = keys[i].line;
    if (!line)
        return error_at(p, p->line, "unknown key %s in [vgpu.%s]; known: devices, memory, compute, compute_mode, "
                        "uids, gids, guest, enforce, remote, executor_user, vm_channels, vm_pinned, cgroups, containers, "
                        "max_executors, executor_cgroup, pinned", name,
                        v->name);
    if (*line)
        return error_at(p, p->line, "%s is set twice in [vgpu.%s] (first at line %d)", name, v->name, *line);
    *line = p->line;
    unsigned long n;
    if (line == &v->devices_line) {
        char buf[1024];
        char *fields[VGPU_MAX_DEVICES];
        snprintf(buf, sizeof(buf), "%s", value);
        int count = vgpu_split_list(buf, fields, VGPU_MAX_DEVICES);
        if (count <= 0)
            return error_at(p, p->line, "devices = %s: GPU indexes (as nvidia-smi numbers them) or GPU-... UUIDs, "
                            "comma-separated, at most %d", value, VGPU_MAX_DEVICES);
        for (int i = 0; i < count; i++) {
            bool index = parse_uint(fields[i], 9999, &n);
            if (!index && (strncmp(fields[i], "GPU-", 4) != 0 || strlen(fields[i]) >= VGPU_DEVICE_TOKEN_LEN))
                return error_at(p, p->line, "devices: \"%s\" is not a GPU index or a GPU-... UUID", fields[i]);
            if (index)
                snprintf(v->devices[i], sizeof(v->devices[i]), "%lu", n);
            else
                snprintf(v->devices[i], sizeof(v->devices[i]), "%s", fields[i]);
            for (int j = 0; j < i; j++)
                if (strcasecmp(v->devices[j], v->devices[i]) == 0)
                    return error_at(p, p->line, "devices lists %s twice", v->devices[i]);
        }
        v->ndev = count;
    } else if (line == &v->memory_line) {
        if (vgpu_parse_size(value, &v->memory) != 0)
            return error_at(p, p->line, "memory = %s: a size per device, such as 20G or 512M", value);
    } else if (line == &v->compute_line) {
        if (vgpu_parse_percent(value, &v->compute) != 0)
            return error_at(p, p->line, "compute = %s: a percent of each device, 1 to 100 (30 or 30%%)", value);
    } else if (line == &v->compute_mode_line) {
        if (vgpu_parse_compute_mode(value, &v->compute_mode) != 0)
            return error_at(p, p->line, "compute_mode = %s: share (the share is guaranteed, idle time is lent out) "
                            "or cap (never more than the share)", value);
    } else if (line == &v->guest_line) {
        if (!parse_bool(value, &v->guest))
            return error_at(p, p->line, "guest = %s: yes or no", value);
    } else if (line == &v->remote_line) {
        if (!parse_bool(value, &v->remote))
            return error_at(p, p->line, "remote = %s: yes or no", value);
    } else if (line == &v->executor_user_line) {
        return executor_user(p, v, value);
    } else if (line == &v->vm_channels_line) {
        if (!parse_uint(value, MED_MAX_VM_CHANNELS, &n) || n == 0)
            return error_at(p, p->line, "vm_channels = %s: the CUDA and NVML connections a VM's processes may have "
                            "at once, 1 to %d", value, MED_MAX_VM_CHANNELS);
        v->vm_channels = (unsigned)n;
    } else if (line == &v->vm_pinned_line) {
        if (vgpu_parse_size(value, &v->vm_pinned) != 0 || v->vm_pinned > MED_MAX_VM_PINNED)
            return error_at(p, p->line, "vm_pinned = %s: the page-locked memory each channel shares with its "
                            "executor, a size up to 16G, such as 64M", value);
    } else if (line == &v->cgroups_line) {
        return cgroups(p, v, value);
    } else if (line == &v->pinned_line) {
        if (vgpu_parse_size(value, &v->pinned) != 0 || v->pinned == 0)
            return error_at(p, p->line, "pinned = %s: the page-locked memory the vGPU's executors may register "
                            "of their guests', together, a size such as 8G", value);
    } else if (line == &v->max_executors_line) {
        if (!parse_uint(value, MED_MAX_EXECUTORS, &n) || n == 0)
            return error_at(p, p->line, "max_executors = %s: how many executors the vGPU's guests may have at "
                            "once, 1 to %d", value, MED_MAX_EXECUTORS);
        v->max_executors = (unsigned)n;
    } else if (line == &v->executor_cgroup_line) {
        size_t len = strlen(value);
        if (value[0] != '/' || len < 2 || len >= VGPU_CGROUP_LEN || med_cgroup_outside(value) ||
            strstr(value, "//") || value[len - 1] == '/')
            return error_at(p, p->line, "executor_cgroup = %s: a cgroup v2 path below the root, such as "
                            "/vgpu-executors.slice, made by the operator with pids.max and memory.max", value);
        snprintf(v->executor_cgroup, sizeof(v->executor_cgroup), "%s", value);
    } else if (line == &v->containers_line) {
        if (!parse_uint(value, MED_MAX_CONTAINERS, &n) || n == 0)
            return error_at(p, p->line, "containers = %s: how many containers may each have a vGPU of this section "
                            "at once, 1 to %d", value, MED_MAX_CONTAINERS);
        if (!isalnum((unsigned char)v->name[0]) || !isalnum((unsigned char)v->name[strlen(v->name) - 1]))
            return error_at(p, p->line, "containers: [vgpu.%s] becomes the Kubernetes resource vgpu.dev/%s and the "
                            "CDI devices vgpu.dev/vgpu=%s-N, whose names begin and end with a letter or a digit: "
                            "rename the section", v->name, v->name, v->name);
        if (strlen(v->name) + 1 + (n > 10 ? 2 : 1) >= VGPU_NAME_LEN)
            return error_at(p, p->line, "containers: vGPU %s's are named %s-0 to %s-%lu, longer than %d characters: "
                            "shorten the section's name", v->name, v->name, v->name, n - 1, VGPU_NAME_LEN - 1);
        v->containers = (unsigned)n;
    } else if (line == &v->enforce_line) {
        if (!parse_enforce(value, &v->kill_over_quota))
            return error_at(p, p->line, "enforce = %s: report or kill", value);
    } else if (line == &v->uids_line) {
        return ids(p, name, value, true, v->uids, &v->nuids);
    } else {
        return ids(p, name, value, false, v->gids, &v->ngids);
    }
    return 1;
}

static int handler(void *user, const char *sec, const char *name, const char *value)
{
    struct parse *p = user;
    (void)sec; /* sections are tracked by the reader */
    if (p->err[0])
        return 1;
    if (p->in_mediator)
        return mediator_key(p, name, value);
    if (p->v)
        return vgpu_key(p, name, value);
    return error_at(p, p->line, "%s = %s is outside any section", name, value);
}

/* pinned = where not set: the vGPU's memory (on all its devices), at most
 * half the host's; half the host's where its memory is the whole GPU's. */
static void default_pinned(struct med_config *c)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t half = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : UINT64_MAX;
    for (int i = 0; i < c->nvgpus; i++) {
        struct med_vgpu_conf *v = &c->vgpu[i];
        uint64_t memory = v->memory && v->memory <= UINT64_MAX / (unsigned)v->ndev ? v->memory * (unsigned)v->ndev
                                                                                   : half;
        if (!v->pinned_line)
            v->pinned = memory < half ? memory : half;
    }
}

/* What a whole file must hold beyond each line being right. */
static int check(struct parse *p)
{
    const struct med_config *c = p->c;
    for (int i = 0; i < c->nvgpus; i++) {
        const struct med_vgpu_conf *v = &c->vgpu[i];
        if (v->ndev == 0)
            return error_at(p, v->line, "vGPU %s has no devices = line", v->name);
        if (v->containers && (v->nuids || v->ngids || v->ncgroups || v->guest || v->remote))
            return error_at(p, v->containers_line, "vGPU %s: containers = makes vGPUs that each admit the one "
                            "container they are given to, so uids, gids, cgroups, guest and remote do not apply",
                            v->name);
        if (!v->guest && !v->containers && v->nuids == 0 && v->ngids == 0 && v->ncgroups == 0)
            return error_at(p, v->line, "vGPU %s admits nobody: give it uids =, gids = or cgroups =", v->name);
        if (v->guest && v->ncgroups)
            return error_at(p, v->cgroups_line, "vGPU %s is a guest's: its processes are the VM's, so cgroups do "
                            "not apply", v->name);
        if (v->guest && (v->nuids || v->ngids))
            return error_at(p, v->line, "vGPU %s is a guest's: its processes are the VM's, so uids and gids do not "
                            "apply", v->name);
        if (v->guest && v->remote)
            return error_at(p, v->remote_line, "vGPU %s is a guest's: a VM reaches it through its window, not "
                            "through the mediator's socket, so remote does not apply", v->name);
        const struct {
            int line;
            const char *key;
        } remote_only[] = { { v->max_executors_line, "max_executors" },
                            { v->executor_cgroup_line, "executor_cgroup" },
                            { v->pinned_line, "pinned" } };
        for (size_t k = 0; k < sizeof(remote_only) / sizeof(*remote_only) && !v->remote; k++)
            if (remote_only[k].line)
                return error_at(p, remote_only[k].line, "vGPU %s: %s applies to a vGPU with remote = yes", v->name,
                                remote_only[k].key);
        if (v->executor_user_line && !v->remote)
            return error_at(p, v->executor_user_line, "vGPU %s: executor_user applies to a vGPU with remote = yes",
                            v->name);
        if (v->vm_pinned_line && !v->vm_channels_line)
            return error_at(p, v->vm_pinned_line, "vGPU %s: vm_pinned applies to a vGPU with vm_channels", v->name);
        if (v->vm_channels_line && (!v->remote || !v->has_executor_user))
            return error_at(p, v->vm_channels_line, "vGPU %s: vm_channels needs remote = yes and an executor_user "
                            "(a VM's processes have no user on this host for its executors to run as)", v->name);
        if (v->has_executor_user &&
            !med_config_admits(v, v->executor_uid, v->executor_gid, v->executor_groups, v->executor_ngroups))
            return error_at(p, v->executor_user_line, "vGPU %s: its executors run as uid %u, which it does not "
                            "admit: add it to uids (or one of its groups to gids), since each executor joins the "
                            "vGPU as its guests' processes would", v->name, (unsigned)v->executor_uid);
        if (v->guest && v->enforce_line)
            return error_at(p, v->enforce_line, "vGPU %s is a guest's: its processes run in the VM, where the "
                            "mediator's watch cannot see them, so enforce does not apply", v->name);
    }
    return 0;
}

/* Each containers = N section becomes its N vGPUs, in its place. */
static int make_containers(struct parse *p)
{
    struct med_config *c = p->c;
    int total = 0;
    for (int i = 0; i < c->nvgpus; i++)
        total += c->vgpu[i].containers ? (int)c->vgpu[i].containers : 1;
    if (total > MED_MAX_VGPUS)
        return error_at(p, c->vgpu[c->nvgpus - 1].line, "the sections make %d vGPUs, more than %d: lower containers",
                        total, MED_MAX_VGPUS);
    for (int i = c->nvgpus - 1; i >= 0; i--) {
        unsigned n = c->vgpu[i].containers;
        if (n == 0)
            continue;
        struct med_vgpu_conf class = c->vgpu[i];
        memmove(&c->vgpu[i + (int)n], &c->vgpu[i + 1], sizeof(c->vgpu[0]) * (size_t)(c->nvgpus - i - 1));
        c->nvgpus += (int)n - 1;
        for (unsigned k = 0; k < n; k++) {
            struct med_vgpu_conf *v = &c->vgpu[i + (int)k];
            *v = class;
            snprintf(v->cls, sizeof(v->cls), "%s", class.name);
            char name[VGPU_NAME_LEN + 16]; /* fits v->name: containers = checked its length */
            snprintf(name, sizeof(name), "%s-%u", class.name, k);
            snprintf(v->name, sizeof(v->name), "%.*s", VGPU_NAME_LEN - 1, name);
        }
    }
    for (int i = 0; i < c->nvgpus; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(c->vgpu[i].name, c->vgpu[j].name) == 0)
                return error_at(p, c->vgpu[i].line, "vGPU %s is defined twice (first at line %d)%s", c->vgpu[i].name,
                                c->vgpu[j].line, c->vgpu[i].cls[0] || c->vgpu[j].cls[0] ? ", one by containers =" : "");
    return 0;
}

/* The file at path if it is a regular file, opened without ever blocking
 * (a FIFO would wait for a writer, in the mediator's one loop), or NULL
 * with err. */
static FILE *open_regular(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (%s); name the config file itself", path,
                 S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
                 : S_ISSOCK(st.st_mode) ? "a socket" : "a device");
        close(fd);
        return NULL;
    }
    /* The same checks for --check-config, a start and a reload. */
    if (med_trusted_file(&st, "config", path, err, errlen) != 0 ||
        med_trusted_dirs(path, "config", err, errlen) != 0) {
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

int med_config_load(const char *path, struct med_config *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->path, sizeof(c->path), "%s", path);
    snprintf(c->socket, sizeof(c->socket), "%s", "/run/vgpu/mediator.sock");
    snprintf(c->state_dir, sizeof(c->state_dir), "%s", "/run/vgpu");
    c->socket_mode = 0660;
    c->socket_uid = (uid_t)-1;
    c->socket_gid = (gid_t)-1;
    c->max_connections_per_uid = MED_DEFAULT_CONNECTIONS_PER_UID;
    c->watch_interval_ms = MED_DEFAULT_WATCH_INTERVAL_MS;
    c->watch_tolerance_bytes = MED_DEFAULT_WATCH_TOLERANCE_BYTES;
    c->watch_tolerance_percent = MED_DEFAULT_WATCH_TOLERANCE_PERCENT;
    struct parse p = { .c = c };
    if (!(p.file = open_regular(path, err, errlen)))
        return -1;
    int r = ini_parse_stream(reader, &p, handler, &p);
    bool unreadable = ferror(p.file);
    int read_errno = errno;
    fclose(p.file);
    if (unreadable) {
        snprintf(err, errlen, "%s: cannot be read: %s", path, strerror(read_errno));
        return -1;
    }
    if (!p.err[0] && r > 0)
        error_at(&p, r, "not an INI line (KEY = VALUE, [SECTION] or ; comment)");
    if (!p.err[0] && r < 0)
        error_at(&p, 0, "cannot be read");
    if (!p.err[0] && c->nvgpus == 0) {
        /* An editor that truncates the file before writing it would
         * otherwise retire every vGPU on a reload. */
        snprintf(err, errlen, "%s: defines no vGPU; a config has at least one [vgpu.NAME] section (an empty file, "
                 "one being written, is refused)", path);
        return -1;
    }
    if (!p.err[0])
        check(&p);
    if (!p.err[0])
        default_pinned(c);
    if (!p.err[0])
        make_containers(&p);
    if (p.err[0]) {
        snprintf(err, errlen, "%s", p.err);
        return -1;
    }
    return 0;
}

const struct med_vgpu_conf *med_config_find(const struct med_config *c, const char *name)
{
    for (int i = 0; i < c->nvgpus; i++)
        if (strcmp(c->vgpu[i].name, name) == 0)
            return &c->vgpu[i];
    return NULL;
}

bool med_cgroup_within(const char *path, const char *root)
{
    size_t n = strlen(root);
    return root[0] == '/' && n > 1 && strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool med_cgroup_outside(const char *path)
{
    size_t n = strlen(path);
    return strstr(path, "/../") || (n >= 3 && strcmp(path + n - 3, "/..") == 0);
}

bool med_config_admits(const struct med_vgpu_conf *v, uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
    if (v->guest)
        return false;
    for (int i = 0; i < v->nuids; i++)
        if (v->uids[i] == uid)
            return true;
    for (int i = 0; i < v->ngids; i++) {
        if (v->gids[i] == gid)
            return true;
        for (int k = 0; k < ngroups; k++)
            if (v->gids[i] == groups[k])
                return true;
    }
    return false;
}
