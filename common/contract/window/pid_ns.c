/* Pids as the caller sees them: pid_ns.h. */
#define _GNU_SOURCE
#include "common/contract/window/pid_ns.h"
#include "common/contract/window/status_page.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file root/who/leaf into buf; its length, or -1. */
static ssize_t read_proc(const char *root, const char *who, const char *leaf, char *buf, size_t len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/%s", root, who, leaf);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

static uint64_t start_time_of(const char *root, const char *who, bool *zombie)
{
    char buf[1024];
    if (read_proc(root, who, "stat", buf, sizeof(buf)) <= 0)
        return 0;
    /* The command name is in parentheses and may itself hold both. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return 0;
    p += 2;
    if (zombie)
        *zombie = *p == 'Z' || *p == 'X';
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p)
            return 0;
        p++;
    }
    return strtoull(p, NULL, 10);
}

uint64_t vgpu_proc_start_time_at(const char *root, int pid, bool *zombie)
{
    char who[16];
    snprintf(who, sizeof(who), "%d", pid);
    return start_time_of(root, who, zombie);
}

/* root/who/status's NSpid: the pid in the procfs's namespace, then in each
 * namespace nested below it down to the process's own.  How many, or -1
 * (a kernel before 4.1 has no NSpid). */
static int nspid(const char *root, const char *who, int *ids, int cap)
{
    char buf[4096];
    if (read_proc(root, who, "status", buf, sizeof(buf)) <= 0)
        return -1;
    char *p = strstr(buf, "\nNSpid:");
    if (!p)
        return -1;
    p += strlen("\nNSpid:");
    int n = 0;
    while (n < cap) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!isdigit((unsigned char)*p))
            break;
        ids[n++] = (int)strtol(p, &p, 10);
    }
    return n;
}

static void ns_link(const char *root, const char *who, char *out, size_t len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/ns/pid", root, who);
    ssize_t n = readlink(path, out, len - 1);
    out[n > 0 ? n : 0] = '\0';
}

void vgpu_pid_ns_open(struct vgpu_pid_ns *ns, const char *root)
{
    memset(ns, 0, sizeof(*ns));
    snprintf(ns->root, sizeof(ns->root), "%s", root);
    int ids[32];
    int n = nspid(root, "self", ids, 32);
    ns->depth = n > 1 ? n - 1 : 0; /* no NSpid: take the procfs for the caller's own */
    ns_link(root, "self", ns->self_ns, sizeof(ns->self_ns));
}

void vgpu_pid_ns_close(struct vgpu_pid_ns *ns)
{
    free(ns->seen);
    ns->seen = NULL;
}

/* p, a pid of the procfs's namespace, in the caller's; 0 if not there. */
static int in_callers_namespace(const struct vgpu_pid_ns *ns, int p)
{
    if (ns->depth == 0)
        return p;
    char who[16];
    snprintf(who, sizeof(who), "%d", p);
    int ids[32];
    /* Exactly as deep as the caller, and in its very namespace: a process
     * one level deeper could be in a sibling's child as well as in the
     * caller's, and no link tells them apart without ptrace rights. */
    if (nspid(ns->root, who, ids, 32) != ns->depth + 1)
        return 0;
    char link[64];
    ns_link(ns->root, who, link, sizeof(link));
    return link[0] && strcmp(link, ns->self_ns) == 0 ? ids[ns->depth] : 0;
}

/* Is pid one of the pids that p, a pid of the procfs's namespace, has in
 * the namespaces it is in? */
static bool names(const struct vgpu_pid_ns *ns, int p, int pid)
{
    char who[16];
    snprintf(who, sizeof(who), "%d", p);
    int ids[32];
    int n = nspid(ns->root, who, ids, 32);
    for (int k = 0; k < n; k++)
        if (ids[k] == pid)
            return true;
    return false;
}

/* Has p joined a vGPU?  Every process that did keeps its status record
 * open (status_page.h), as vgpu-doctor finds it. */
static bool joined(const struct vgpu_pid_ns *ns, int p)
{
    char dir[512], target[64];
    snprintf(dir, sizeof(dir), "%s/%d/fd", ns->root, p);
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
        target[n > 0 ? n : 0] = '\0';
        found = strcmp(target, VGPU_STATUS_PAGE_LINK) == 0;
    }
    closedir(d);
    return found;
}

static void scan(struct vgpu_pid_ns *ns)
{
    ns->scanned = true;
    DIR *d = opendir(ns->root);
    if (!d)
        return;
    unsigned cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        uint64_t t = start_time_of(ns->root, e->d_name, NULL);
        if (!t)
            continue;
        if (ns->nseen == cap) {
            cap = cap ? 2 * cap : 256;
            struct vgpu_pid_seen *more = realloc(ns->seen, cap * sizeof(*more));
            if (!more)
                break;
            ns->seen = more;
        }
        ns->seen[ns->nseen++] = (struct vgpu_pid_seen){ atoi(e->d_name), t };
    }
    closedir(d);
}

int vgpu_pid_ns_visible(struct vgpu_pid_ns *ns, int pid, uint64_t start_time)
{
    if (pid <= 0)
        return 0;
    uint64_t t = vgpu_proc_start_time_at(ns->root, pid, NULL);
    if (start_time == 0) /* recorded where /proc said nothing: trust the pid alone */
        return t ? in_callers_namespace(ns, pid) : 0;
    if (t == start_time)
        return in_callers_namespace(ns, pid);
    /* Recorded in another namespace: the one process that started then. */
    if (!ns->scanned)
        scan(ns);
    /* Of several that started in the same tick (a container's first
     * process and the one it forks, workers started together), the one the
     * recorded pid names, when that is one of its own (its innermost,
     * recorded standalone), else the one that joined a vGPU. */
    int only = 0, named = 0, in_vgpu = 0;
    unsigned started = 0, nnamed = 0, njoined = 0;
    for (unsigned i = 0; i < ns->nseen; i++) {
        if (ns->seen[i].start_time != start_time)
            continue;
        int p = ns->seen[i].pid;
        started++;
        only = p;
        if (names(ns, p, pid)) {
            named = p;
            nnamed++;
        }
        if (joined(ns, p)) {
            in_vgpu = p;
            njoined++;
        }
    }
    int found = started == 1 ? only : nnamed == 1 ? named : njoined == 1 ? in_vgpu : 0;
    return found ? in_callers_namespace(ns, found) : 0;
}
