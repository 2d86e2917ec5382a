/* The operator's settings; see operator.h and docs/guide/mediator.md. */
#define _GNU_SOURCE
#include "common/operator.h"

#include "common/error.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE 16384

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int set_string(char *dst, size_t size, const char *value, int line, const char *key, char *err, size_t errlen)
{
    if (strlen(value) >= size)
        return vgpu_fail(err, errlen, "%d: %s is longer than %zu characters", line, key, size - 1);
    strcpy(dst, value);
    return 0;
}

static int set_path(char *dst, size_t size, const char *value, int line, const char *key, char *err, size_t errlen)
{
    if (value[0] != '/')
        return vgpu_fail(err, errlen, "%d: %s = %s: an absolute path is expected", line, key, value);
    return set_string(dst, size, value, line, key, err, errlen);
}

/* The keys, in the order of struct key_lines. */
static const char *const keys[] = { "require", "mediator_socket", "real_libcuda", "real_nvml", "pci_id" };

/* Where each key was set (0: not yet): a key set twice is refused, since
 * whichever won, an operator reading the file could take the other. */
struct key_lines {
    int line[sizeof(keys) / sizeof(*keys)];
};

static int key_value(struct vgpu_operator *o, int line, const char *key, const char *value, char *err, size_t errlen)
{
    if (strcmp(key, "require") == 0) {
        if (strcmp(value, "mediator") == 0)
            o->require = VGPU_REQUIRE_MEDIATOR;
        else if (strcmp(value, "guest-window") == 0)
            o->require = VGPU_REQUIRE_GUEST;
        else if (strcmp(value, "none") == 0)
            o->require = VGPU_REQUIRE_NONE;
        else
            return vgpu_fail(err, errlen, "%d: require = %s: expected mediator, guest-window or none", line, value);
        return 0;
    }
    if (strcmp(key, "mediator_socket") == 0)
        return set_path(o->mediator_socket, sizeof(o->mediator_socket), value, line, key, err, errlen);
    if (strcmp(key, "real_libcuda") == 0)
        return set_path(o->real_libcuda, sizeof(o->real_libcuda), value, line, key, err, errlen);
    if (strcmp(key, "real_nvml") == 0)
        return set_path(o->real_nvml, sizeof(o->real_nvml), value, line, key, err, errlen);
    if (strcmp(key, "pci_id") == 0) {
        unsigned vendor, device;
        char end;
        if (sscanf(value, "%4x:%4x%c", &vendor, &device, &end) != 2)
            return vgpu_fail(err, errlen, "%d: pci_id = %s: expected VENDOR:DEVICE in hex, e.g. 1af4:1110", line,
                             value);
        return set_string(o->pci_id, sizeof(o->pci_id), value, line, key, err, errlen);
    }
    return vgpu_fail(err, errlen, "%d: unknown key %s; the keys are require, mediator_socket, real_libcuda, "
                     "real_nvml and pci_id", line, key);
}

/* A key's first setting, or refused: where it was set before. */
static int first_setting(struct key_lines *seen, int line, const char *key, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
        if (strcmp(key, keys[i]) != 0)
            continue;
        if (seen->line[i])
            return vgpu_fail(err, errlen, "%d: %s is set twice (first at line %d)", line, key, seen->line[i]);
        seen->line[i] = line;
    }
    return 0;
}

int vgpu_operator_parse(const char *text, size_t len, struct vgpu_operator *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof(*o));
    o->present = true;
    snprintf(o->mediator_socket, sizeof(o->mediator_socket), "/run/vgpu/mediator.sock");
    bool in_vgpu = false;
    int line = 0, section_line = 0;
    struct key_lines seen = { { 0 } };
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        char buf[1024];
        line++;
        if (n >= sizeof(buf))
            return vgpu_fail(err, errlen, "%d: line longer than %zu characters", line, sizeof(buf) - 1);
        memcpy(buf, text + at, n);
        buf[n] = '\0';
        at += n + 1;
        if (memchr(buf, '\0', n))
            return vgpu_fail(err, errlen, "%d: a NUL byte: not a text file", line);
        char *s = trim(buf);
        if (!*s || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            char *close = strchr(s, ']');
            if (!close || *trim(close + 1))
                return vgpu_fail(err, errlen, "%d: a section header is [NAME] alone on its line", line);
            *close = '\0';
            in_vgpu = strcmp(trim(s + 1), "vgpu") == 0;
            if (!in_vgpu)
                return vgpu_fail(err, errlen, "%d: unknown section [%s]; the settings go in [vgpu]", line, s + 1);
            if (section_line)
                return vgpu_fail(err, errlen, "%d: a second [vgpu] section (the first at line %d)", line,
                                 section_line);
            section_line = line;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq)
            return vgpu_fail(err, errlen, "%d: expected KEY = VALUE", line);
        if (!in_vgpu)
            return vgpu_fail(err, errlen, "%d: a key before the [vgpu] section", line);
        *eq = '\0';
        char *value = trim(eq + 1), *comment = strpbrk(value, "#;");
        if (comment)
            *comment = '\0';
        if (first_setting(&seen, line, trim(s), err, errlen) != 0 ||
            key_value(o, line, trim(s), trim(value), err, errlen) != 0)
            return -1;
    }
    /* A file that is there says what it requires: an empty or half-written
     * one (an editor's save cut short) must not lift the lock. */
    if (!seen.line[0])
        return vgpu_fail(err, errlen, "says no require = (mediator, guest-window or none): an empty or unfinished "
                         "file is not taken for no lock");
    return 0;
}

/* Root's, and writable by no one else.  (A sticky directory, /tmp, lets
 * others make entries, but not replace one they do not own: the entry
 * below it is checked in its turn.) */
static const char *untrusted(const struct stat *st, char *buf, size_t len)
{
    if (st->st_uid != 0)
        snprintf(buf, len, "owned by uid %u, not root", (unsigned)st->st_uid);
    else if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX)))
        snprintf(buf, len, "writable by group or others (mode %04o)", (unsigned)(st->st_mode & 07777));
    else
        return NULL;
    return buf;
}

static int refuse(struct vgpu_operator *o, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(struct vgpu_operator *o, const char *path, const char *fmt, ...)
{
    memset(o, 0, sizeof(*o));
    o->present = o->refused = true;
    int n = snprintf(o->why, sizeof(o->why), "the operator's vgpu settings %s ", path);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(o->why))
        n += vsnprintf(o->why + n, sizeof(o->why) - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof(o->why))
        snprintf(o->why + n, sizeof(o->why) - (size_t)n, "; vgpu refuses to run until root fixes it (chown root, "
                 "chmod 644, or remove it)");
    return -1;
}

int vgpu_operator_load(const char *path, struct vgpu_operator *o)
{
    memset(o, 0, sizeof(*o));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
        return 0; /* no operator settings: the environment decides */
    if (fd < 0)
        return refuse(o, path, "cannot be opened: %s", strerror(errno));
    struct stat st;
    char why[128], text[MAX_FILE + 1];
    const char *bad = NULL;
    if (fstat(fd, &st) != 0)
        bad = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        bad = "not a regular file";
    else
        bad = untrusted(&st, why, sizeof(why));
    /* Its directories too: whoever can write one can replace the file. */
    char dir[512];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *slash = strrchr(dir, '/'); !bad && slash; slash = strrchr(dir, '/')) {
        *slash = '\0';
        struct stat ds;
        const char *d = dir[0] ? dir : "/";
        if (stat(d, &ds) != 0 || untrusted(&ds, why, sizeof(why))) {
            close(fd);
            return refuse(o, path, "is in %s, which is %s", d, stat(d, &ds) != 0 ? "unreadable" : why);
        }
        if (!dir[0])
            break;
    }
    ssize_t n = bad ? 0 : read(fd, text, MAX_FILE + 1);
    close(fd);
    if (bad)
        return refuse(o, path, "is %s", bad);
    if (n < 0)
        return refuse(o, path, "cannot be read: %s", strerror(errno));
    if (n > MAX_FILE)
        return refuse(o, path, "is larger than %d bytes", MAX_FILE);
    char err[512];
    if (vgpu_operator_parse(text, (size_t)n, o, err, sizeof(err)) != 0)
        return refuse(o, path, "%s%s", isdigit((unsigned char)err[0]) ? "line " : "", err);
    return 0;
}

/* Read once per library copy; written by load_once() alone. */
static struct vgpu_operator settings;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_once(void)
{
    vgpu_operator_load(VGPU_OPERATOR_CONFIG, &settings);
}

const struct vgpu_operator *vgpu_operator(void)
{
    pthread_once(&once, load_once);
    return &settings;
}
