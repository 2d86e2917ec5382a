/* The process's status record; see status_page.h. */
#define _GNU_SOURCE
#include "vgpu_backend/status_page.h"

#include "common/error.h"
#include "common/log.h"
#include "vgpu_backend/self.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- text ---- */

struct out {
    char *buf;
    size_t len, used;
    bool full;
};

/* Appends "key value\n", the value on one line. */
static void put(struct out *o, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(struct out *o, const char *key, const char *fmt, ...)
{
    size_t room = o->len - o->used;
    int k = snprintf(o->buf + o->used, room, "%s ", key);
    if (k < 0 || (size_t)k >= room) {
        o->full = true;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->used + k, room - (size_t)k, fmt, ap);
    va_end(ap);
    /* The value, its newline and the terminator must fit. */
    if (n < 0 || (size_t)k + (size_t)n + 2 > room) {
        o->full = true;
        return;
    }
    char *value = o->buf + o->used + k;
    for (int i = 0; i < n; i++)
        if (value[i] == '\n' || value[i] == '\r')
            value[i] = ' ';
    value[n] = '\n';
    value[n + 1] = '\0';
    o->used += (size_t)k + (size_t)n + 1;
}

int vgpu_status_page_format(const struct vgpu_status_page *p, char *buf, size_t len)
{
    struct out o = { buf, len, 0, len == 0 };
    if (o.full)
        return -1;
    buf[0] = '\0';
    put(&o, "vgpu-status", "%d", VGPU_STATUS_PAGE_VERSION);
    put(&o, "pid", "%d", p->pid);
    put(&o, "mode", "%s", p->mode);
    put(&o, "source", "%s", p->source);
    if (p->vgpu[0])
        put(&o, "vgpu", "%s", p->vgpu);
    if (p->bar0[0])
        put(&o, "bar0", "%s", p->bar0);
    if (p->socket[0])
        put(&o, "socket", "%s", p->socket);
    put(&o, "slot", "%d", p->slot);
    for (int i = 0; i < p->ndev && i < VGPU_MAX_DEVICES; i++)
        put(&o, "device", "%d %s %s %" PRIu64 " %" PRIu64, i, p->dev[i].uuid, p->dev[i].physical, p->dev[i].limit,
            p->dev[i].total);
    if (p->reason[0])
        put(&o, "reason", "%s", p->reason);
    return o.full ? -1 : (int)o.used;
}

static int parse_device(const char *value, struct vgpu_status_page *p)
{
    struct vgpu_status_page_device d = { 0 };
    int index;
    if (sscanf(value, "%d %95s %47s %" SCNu64 " %" SCNu64, &index, d.uuid, d.physical, &d.limit, &d.total) != 5 ||
        index != p->ndev || index >= VGPU_MAX_DEVICES)
        return -1;
    p->dev[p->ndev++] = d;
    return 0;
}

int vgpu_status_page_parse(const char *text, size_t len, struct vgpu_status_page *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    p->slot = -1;
    size_t at = 0;
    for (int line = 1; at < len; line++) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        char copy[4096 + 64];
        if (n >= sizeof(copy))
            return vgpu_fail(err, errlen, "line %d is %zu bytes long", line, n);
        memcpy(copy, text + at, n);
        copy[n] = '\0';
        at += n + 1;
        char *value = strchr(copy, ' ');
        if (!value)
            return vgpu_fail(err, errlen, "line %d is not \"key value\": %s", line, copy);
        *value++ = '\0';
        if (line == 1) {
            if (strcmp(copy, "vgpu-status") != 0)
                return vgpu_fail(err, errlen, "not a vgpu status record");
            p->version = (unsigned)strtoul(value, NULL, 10);
            if (p->version != VGPU_STATUS_PAGE_VERSION)
                return vgpu_fail(err, errlen, "record version %u, this reader knows version %d (use the vgpu-doctor "
                                 "of the vgpu the process runs)", p->version, VGPU_STATUS_PAGE_VERSION);
        } else if (strcmp(copy, "pid") == 0) {
            p->pid = atoi(value);
        } else if (strcmp(copy, "mode") == 0) {
            snprintf(p->mode, sizeof(p->mode), "%s", value);
        } else if (strcmp(copy, "source") == 0) {
            snprintf(p->source, sizeof(p->source), "%s", value);
        } else if (strcmp(copy, "vgpu") == 0) {
            snprintf(p->vgpu, sizeof(p->vgpu), "%s", value);
        } else if (strcmp(copy, "bar0") == 0) {
            snprintf(p->bar0, sizeof(p->bar0), "%s", value);
        } else if (strcmp(copy, "socket") == 0) {
            snprintf(p->socket, sizeof(p->socket), "%s", value);
        } else if (strcmp(copy, "slot") == 0) {
            p->slot = atoi(value);
        } else if (strcmp(copy, "device") == 0) {
            if (parse_device(value, p) != 0)
                return vgpu_fail(err, errlen, "line %d: a device line out of order or malformed: %s", line, value);
        } else if (strcmp(copy, "reason") == 0) {
            snprintf(p->reason, sizeof(p->reason), "%s", value);
        }
    }
    if (p->version == 0)
        return vgpu_fail(err, errlen, "an empty record");
    if (!p->mode[0])
        return vgpu_fail(err, errlen, "the record has no mode line");
    return 0;
}

/* ---- the record of this process ---- */

static const char *source_name(const struct vgpu_self *s)
{
    if (s->mode == VGPU_MODE_OFF)
        return "none";
    /* A refusal may come before the source is known (self.c sets it once
     * a source answers). */
    if (s->mode == VGPU_MODE_REFUSED)
        return "unknown";
    switch (s->source) {
    case VGPU_SOURCE_MEDIATOR: return "mediator";
    case VGPU_SOURCE_GUEST: return "guest";
    default: return "standalone";
    }
}

static void describe(const struct vgpu_self *s, struct vgpu_status_page *p)
{
    static const char *const modes[] = { [VGPU_MODE_OFF] = "off", [VGPU_MODE_ON] = "on",
                                         [VGPU_MODE_REFUSED] = "refused" };
    memset(p, 0, sizeof(*p));
    p->version = VGPU_STATUS_PAGE_VERSION;
    p->pid = getpid();
    snprintf(p->mode, sizeof(p->mode), "%s", modes[s->mode]);
    snprintf(p->source, sizeof(p->source), "%s", source_name(s));
    p->slot = s->bar0.slot;
    if (s->mode == VGPU_MODE_REFUSED)
        snprintf(p->reason, sizeof(p->reason), "%s", s->why);
    if (s->mode != VGPU_MODE_ON)
        return;
    if (s->source == VGPU_SOURCE_MEDIATOR) {
        snprintf(p->vgpu, sizeof(p->vgpu), "%s", s->link.vgpu);
        snprintf(p->socket, sizeof(p->socket), "%s", s->link.socket);
    } else {
        snprintf(p->bar0, sizeof(p->bar0), "%s", s->bar0.path);
        if (s->source == VGPU_SOURCE_GUEST)
            snprintf(p->vgpu, sizeof(p->vgpu), "%s", s->bar0.bar->header.name);
    }
    p->ndev = s->ndev;
    for (int i = 0; i < s->ndev; i++) {
        snprintf(p->dev[i].uuid, sizeof(p->dev[i].uuid), "%s", s->dev[i].uuid);
        snprintf(p->dev[i].physical, sizeof(p->dev[i].physical), "%s", s->bar0.bar->config.device[i].physical);
        p->dev[i].limit = vgpu_bar0_limit(s->bar0.bar, i);
        p->dev[i].total = s->dev[i].physical_total;
    }
}

/* A sealed memfd holding text; the descriptor, or -1 with err. */
static int sealed_memfd(const char *text, size_t len, char *err, size_t errlen)
{
    int fd = memfd_create(VGPU_STATUS_PAGE_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return vgpu_fail(err, errlen, "memfd_create: %s", strerror(errno));
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            vgpu_fail(err, errlen, "write: %s", n < 0 ? strerror(errno) : "wrote nothing");
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
        vgpu_fail(err, errlen, "sealing: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* The record this process published, owned by the joining library's copy
 * of this file and written under self.c's join lock.  The descriptor's
 * identity is kept so that a number the program closed and reused is never
 * overwritten. */
static struct {
    int fd;
    dev_t dev;
    ino_t ino;
    char text[VGPU_STATUS_PAGE_MAX];
} published = { .fd = -1 };

static bool still_ours(void)
{
    struct stat st;
    return published.fd >= 0 && fstat(published.fd, &st) == 0 && st.st_dev == published.dev &&
           st.st_ino == published.ino;
}

void vgpu_status_page_publish(const struct vgpu_self *s)
{
    /* Static, not on the stack of whatever thread makes the first driver
     * call: this runs under the join lock. */
    static struct vgpu_status_page p;
    static char text[VGPU_STATUS_PAGE_MAX];
    char err[256];
    describe(s, &p);
    int len = vgpu_status_page_format(&p, text, sizeof(text));
    if (len < 0) {
        vgpu_debug("no status record: it does not fit in %d bytes", VGPU_STATUS_PAGE_MAX);
        return;
    }
    bool ours = still_ours();
    if (ours && strcmp(text, published.text) == 0)
        return;
    int fd = sealed_memfd(text, (size_t)len, err, sizeof(err));
    if (fd < 0) {
        vgpu_debug("no status record for vgpu-doctor: %s", err);
        return;
    }
    /* One descriptor: a new record takes the old one's number. */
    if (ours) {
        if (dup3(fd, published.fd, O_CLOEXEC) == published.fd) {
            close(fd);
            fd = published.fd;
        } else {
            close(published.fd);
        }
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        vgpu_debug("no status record for vgpu-doctor: fstat: %s", strerror(errno));
        close(fd);
        published.fd = -1;
        return;
    }
    published.fd = fd;
    published.dev = st.st_dev;
    published.ino = st.st_ino;
    memcpy(published.text, text, (size_t)len + 1);
}
