/* This process's status record, published; see status_publish.h. */
#define _GNU_SOURCE
#include "vgpu_backend/join/status_publish.h"

#include "common/error.h"
#include "common/log.h"
#include "common/contract/window/status_page.h"
#include "vgpu_backend/join/joined.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
