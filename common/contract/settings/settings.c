/* Standalone vGPU settings from the environment; see settings.h. */
#define _GNU_SOURCE
#include "common/contract/settings/settings.h"

#include "common/error.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int vgpu_parse_size(const char *text, uint64_t *bytes)
{
    if (!text || !isdigit((unsigned char)*text))
        return -1;
    errno = 0;
    char *end;
    double v = strtod(text, &end);
    if (errno || end == text || !isfinite(v))
        return -1;
    double unit = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': unit = 1024.0; end++; break;
    case 'M': unit = 1024.0 * 1024; end++; break;
    case 'G': unit = 1024.0 * 1024 * 1024; end++; break;
    case 'T': unit = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    /* "G", "GB", "GiB" all mean 2^30: the quota is about device memory,
     * which NVIDIA tools count in MiB/GiB. */
    if (unit > 1 && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0')
        return -1;
    v *= unit;
    if (v < 1 || v >= 18446744073709551615.0)
        return -1;
    *bytes = (uint64_t)v;
    return 0;
}

const char *vgpu_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.2f %s", v, units[u]);
    return buf;
}

static bool is_index(const char *t)
{
    if (!*t || strlen(t) > 4)
        return false;
    for (; *t; t++)
        if (!isdigit((unsigned char)*t))
            return false;
    return true;
}

static bool is_uuid(const char *t)
{
    if (strncmp(t, "GPU-", 4) != 0 || strlen(t) < 5 || strlen(t) >= VGPU_DEVICE_TOKEN_LEN)
        return false;
    for (t += 4; *t; t++)
        if (!isxdigit((unsigned char)*t) && *t != '-')
            return false;
    return true;
}

int vgpu_split_list(char *text, char **fields, int max)
{
    int n = 0;
    for (char *save = NULL, *f = strtok_r(text, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*f))
            f++;
        char *e = f + strlen(f);
        while (e > f && isspace((unsigned char)e[-1]))
            *--e = '\0';
        if (!*f)
            continue;
        if (n == max)
            return -1;
        fields[n++] = f;
    }
    return n;
}

static int parse_visible(const char *value, struct vgpu_settings *s, char *err, size_t errlen)
{
    static const char accepted[] = "a comma-separated list of physical GPU indexes (as nvidia-smi numbers them) "
                                   "or GPU-... UUIDs";
    char buf[2048];
    if (strlen(value) >= sizeof(buf))
        return vgpu_fail(err, errlen, "VGPU_VISIBLE_DEVICES is too long; expected %s", accepted);
    strcpy(buf, value);
    char *fields[VGPU_MAX_DEVICES];
    int n = vgpu_split_list(buf, fields, VGPU_MAX_DEVICES);
    if (n < 0)
        return vgpu_fail(err, errlen, "VGPU_VISIBLE_DEVICES=%s lists more than %d devices", value, VGPU_MAX_DEVICES);
    if (n == 0 && strspn(value, " \t") != strlen(value))
        return vgpu_fail(err, errlen, "VGPU_VISIBLE_DEVICES=%s: expected %s", value, accepted);
    for (int i = 0; i < n; i++) {
        if (!is_index(fields[i]) && !is_uuid(fields[i]))
            return vgpu_fail(err, errlen, "VGPU_VISIBLE_DEVICES=%s: \"%s\" is not a GPU index or a GPU-... UUID; expected %s",
                        value, fields[i], accepted);
        if (is_index(fields[i]))
            snprintf(fields[i], strlen(fields[i]) + 1, "%d", atoi(fields[i])); /* "007" -> "7" */
        for (int j = 0; j < i; j++)
            if (strcasecmp(s->devices[j], fields[i]) == 0)
                return vgpu_fail(err, errlen, "VGPU_VISIBLE_DEVICES=%s names device %s twice", value, fields[i]);
        snprintf(s->devices[i], sizeof(s->devices[i]), "%s", fields[i]);
    }
    s->listed = true;
    s->ndevices = n;
    return 0;
}

int vgpu_parse_percent(const char *text, unsigned *percent)
{
    if (!text || !isdigit((unsigned char)*text))
        return -1;
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (*end == '%')
        end++;
    if (errno || *end || v == 0 || v > 100)
        return -1;
    *percent = (unsigned)v;
    return 0;
}

int vgpu_parse_compute_mode(const char *text, unsigned *mode)
{
    if (text && strcmp(text, "share") == 0)
        return *mode = VGPU_COMPUTE_SHARE_MODE, 0;
    if (text && strcmp(text, "cap") == 0)
        return *mode = VGPU_COMPUTE_CAP, 0;
    return -1;
}

/* A value per vGPU device: one for all (into *all), or "0:A,1:B" (into
 * each[] and set[]), as VGPU_MEMORY_LIMIT and VGPU_COMPUTE_SHARE take it.
 * parse_one reads a value into the given slot; 0 or -1. */
static int parse_per_device(const char *var, const char *value, const char *accepted, void *all, void *each,
                            size_t size, bool *set, int (*parse_one)(const char *, void *), const char *what, char *err,
                            size_t errlen)
{
    if (!strchr(value, ':')) {
        if (parse_one(value, all) != 0)
            return vgpu_fail(err, errlen, "%s=%s: not %s; expected %s", var, value, what, accepted);
        return 0;
    }
    char buf[2048];
    if (strlen(value) >= sizeof(buf))
        return vgpu_fail(err, errlen, "%s is too long; expected %s", var, accepted);
    strcpy(buf, value);
    char *fields[VGPU_MAX_DEVICES];
    int n = vgpu_split_list(buf, fields, VGPU_MAX_DEVICES);
    if (n <= 0)
        return vgpu_fail(err, errlen, "%s=%s: expected %s", var, value, accepted);
    for (int i = 0; i < n; i++) {
        char *colon = strchr(fields[i], ':');
        if (!colon)
            return vgpu_fail(err, errlen, "%s=%s: \"%s\" has no device index; expected %s", var, value, fields[i],
                             accepted);
        *colon = '\0';
        if (!is_index(fields[i]) || atoi(fields[i]) >= VGPU_MAX_DEVICES)
            return vgpu_fail(err, errlen, "%s=%s: \"%s\" is not a vGPU device index (0-%d)", var, value, fields[i],
                             VGPU_MAX_DEVICES - 1);
        int d = atoi(fields[i]);
        if (set[d])
            return vgpu_fail(err, errlen, "%s=%s sets device %d twice", var, value, d);
        if (parse_one(colon + 1, (char *)each + (size_t)d * size) != 0)
            return vgpu_fail(err, errlen, "%s=%s: \"%s\" (device %d) is not %s; expected %s", var, value, colon + 1, d,
                             what, accepted);
        set[d] = true;
    }
    return 0;
}

static int one_size(const char *text, void *out)
{
    return vgpu_parse_size(text, out);
}

static int one_percent(const char *text, void *out)
{
    return vgpu_parse_percent(text, out);
}

static int parse_limit(const char *value, struct vgpu_settings *s, char *err, size_t errlen)
{
    return parse_per_device("VGPU_MEMORY_LIMIT", value,
                            "a size such as 20G, 512M or a byte count, or per vGPU device 0:20G,1:8G", &s->limit_all,
                            s->limit, sizeof(s->limit[0]), s->limit_set, one_size, "a size", err, errlen);
}

static int parse_share(const char *value, struct vgpu_settings *s, char *err, size_t errlen)
{
    return parse_per_device("VGPU_COMPUTE_SHARE", value,
                            "a percent of each device such as 30% (1 to 100), or per vGPU device 0:30%,1:50%",
                            &s->share_all, s->share, sizeof(s->share[0]), s->share_set, one_percent, "a percent", err,
                            errlen);
}

/* FNV-1a: a short, stable name for a long device list. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void default_bar0(struct vgpu_settings *s, uid_t uid)
{
    char key[VGPU_MAX_DEVICES * VGPU_DEVICE_TOKEN_LEN] = "all";
    if (s->listed) {
        key[0] = '\0';
        for (int i = 0; i < s->ndevices; i++) {
            strcat(key, i ? "-" : "");
            strcat(key, s->devices[i]);
        }
        if (s->ndevices == 0)
            strcpy(key, "none");
    }
    if (strlen(key) > 40) {
        char hashed[40];
        snprintf(hashed, sizeof(hashed), "h%016llx", (unsigned long long)fnv1a(key));
        strcpy(key, hashed);
    }
    /* In a directory of the user's own: a file directly in /dev/shm could be
     * made first by another user, who would then hold this user's limits. */
    snprintf(s->bar0_dir, sizeof(s->bar0_dir), "/dev/shm/vgpu-%u", (unsigned)uid);
    snprintf(s->bar0, sizeof(s->bar0), "%s/%s.bar0", s->bar0_dir, key);
}

int vgpu_settings_parse(const struct vgpu_settings_env *e, uid_t uid, struct vgpu_settings *s, char *err,
                        size_t errlen)
{
    const char *visible = e->visible, *limit = e->limit, *bar0 = e->bar0;
    memset(s, 0, sizeof(*s));
    if (err && errlen)
        err[0] = '\0';
    s->active = visible || limit || bar0 || e->share || e->mode;
    if (visible && parse_visible(visible, s, err, errlen) != 0)
        return -1;
    if (limit && parse_limit(limit, s, err, errlen) != 0)
        return -1;
    if (e->share && parse_share(e->share, s, err, errlen) != 0)
        return -1;
    if (e->mode && vgpu_parse_compute_mode(e->mode, &s->compute_mode) != 0)
        return vgpu_fail(err, errlen, "VGPU_COMPUTE_MODE=%s: expected share (the share is guaranteed, idle time is "
                         "lent out) or cap (never more than the share)", e->mode);
    for (int d = 0; s->listed && d < VGPU_MAX_DEVICES; d++) {
        if (s->limit_set[d] && d >= s->ndevices)
            return vgpu_fail(err, errlen, "VGPU_MEMORY_LIMIT=%s sets device %d, but VGPU_VISIBLE_DEVICES=%s has %d",
                             limit, d, visible, s->ndevices);
        if (s->share_set[d] && d >= s->ndevices)
            return vgpu_fail(err, errlen, "VGPU_COMPUTE_SHARE=%s sets device %d, but VGPU_VISIBLE_DEVICES=%s has %d",
                             e->share, d, visible, s->ndevices);
    }
    if (bar0) {
        if (bar0[0] != '/' || strlen(bar0) >= sizeof(s->bar0))
            return vgpu_fail(err, errlen, "VGPU_BAR0=%s: expected the absolute path of a BAR0 file (e.g. /dev/shm/team.bar0)",
                        bar0);
        strcpy(s->bar0, bar0);
        s->bar0_explicit = true;
    } else {
        default_bar0(s, uid);
    }
    return 0;
}

/* An empty variable counts as unset, as the shell's VAR= idiom intends;
 * except VGPU_VISIBLE_DEVICES, where empty means "no device" as with
 * CUDA_VISIBLE_DEVICES. */
static const char *env(const char *name, bool empty_is_value)
{
    const char *v = getenv(name);
    return v && (*v || empty_is_value) ? v : NULL;
}

int vgpu_settings_from_env(struct vgpu_settings *s, char *err, size_t errlen)
{
    struct vgpu_settings_env e = { .visible = env("VGPU_VISIBLE_DEVICES", true), .limit = env("VGPU_MEMORY_LIMIT", false),
                                   .bar0 = env("VGPU_BAR0", false), .share = env("VGPU_COMPUTE_SHARE", false),
                                   .mode = env("VGPU_COMPUTE_MODE", false) };
    return vgpu_settings_parse(&e, getuid(), s, err, errlen);
}

unsigned vgpu_settings_share(const struct vgpu_settings *s, int i)
{
    unsigned v = i < 0 || i >= VGPU_MAX_DEVICES ? 0 : s->share_set[i] ? s->share[i] : s->share_all;
    return v ? v : 100;
}

uint64_t vgpu_settings_limit(const struct vgpu_settings *s, int i)
{
    if (i < 0 || i >= VGPU_MAX_DEVICES)
        return 0;
    return s->limit_set[i] ? s->limit[i] : s->limit_all;
}
