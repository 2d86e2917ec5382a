/* What /proc says of a process; see proc.h. */
#define _GNU_SOURCE
#include "tools/mediatord/proc.h"

#include "common/contract/window/bar0.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* path's first len - 1 bytes, terminated; false if it cannot be read. */
static bool read_text(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n > 0;
}

/* The effective ids of Uid:, Gid: and the list of Groups: in /proc/PID/status. */
static void read_ids(pid_t pid, struct med_proc *out)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (!read_text(path, buf, sizeof(buf)))
        return;
    unsigned long real, effective;
    const char *uid = strstr(buf, "\nUid:"), *gid = strstr(buf, "\nGid:"), *groups = strstr(buf, "\nGroups:");
    if (!uid || !gid || sscanf(uid + 5, "%lu %lu", &real, &effective) != 2)
        return;
    out->uid = (uid_t)effective;
    if (sscanf(gid + 5, "%lu %lu", &real, &effective) != 2)
        return;
    out->gid = (gid_t)effective;
    out->ids_known = true;
    if (!groups)
        return;
    const char *q = groups + 8, *end = strchr(q, '\n');
    while (out->ngroups < MED_PROC_MAX_GROUPS) {
        char *next;
        unsigned long g = strtoul(q, &next, 10);
        if (next == q || (end && next > end))
            break;
        out->groups[out->ngroups++] = (gid_t)g;
        q = next;
    }
}

#define PF_EXITING 0x4u /* the kernel's task flag: in exit(), its descriptors closing */

/* Whether pid has begun to exit (field 9 of /proc/PID/stat, the task's
 * flags): its connection to the mediator may be closed already while the
 * driver still lists it. */
static bool exiting(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the name may hold anything, ')' too */
    unsigned long flags = 0;
    return p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 && (flags & PF_EXITING);
}

bool med_proc_read(pid_t pid, struct med_proc *out)
{
    memset(out, 0, sizeof(*out));
    if (pid <= 0 || !(out->start_time = vgpu_proc_start_time(pid)))
        return false;
    /* Dead with this start time (a zombie, or no longer there), or on its
     * way out. */
    out->ended = !vgpu_bar0_owner_alive(pid, out->start_time) || exiting(pid);
    read_ids(pid, out);
    return true;
}

void med_read_comm(pid_t pid, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, out, len - 1) : -1;
    if (fd >= 0)
        close(fd);
    out[n > 0 ? n : 0] = '\0';
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = '\0';
    for (char *p = out; *p; p++)
        if (*p < 0x20 || *p > 0x7e)
            *p = '?';
    if (!out[0])
        snprintf(out, len, "?");
}

void med_user_name(uid_t uid, bool known, char *out, size_t len)
{
    struct passwd pw, *r = NULL;
    char buf[4096];
    if (!known)
        snprintf(out, len, "?");
    else if (getpwuid_r(uid, &pw, buf, sizeof(buf), &r) == 0 && r)
        snprintf(out, len, "%s", r->pw_name);
    else
        snprintf(out, len, "%u", (unsigned)uid);
}

bool med_read_cgroup(pid_t pid, char *out, size_t len)
{
    char path[64], line[4096];
    out[0] = '\0';
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        if (strncmp(line, "0::", 3) != 0)
            continue;
        line[strcspn(line, "\n")] = '\0';
        /* A path too long to hold is no path: never a prefix of the real one. */
        found = line[3] == '/' && strlen(line + 3) < len;
        if (found)
            snprintf(out, len, "%s", line + 3);
    }
    fclose(f);
    return found;
}

/* Where the mediator's cgroup v2 hierarchy is mounted whole (its root, not
 * a subtree bound elsewhere), "" where it is not: read once, by the loop
 * thread (its callers' one thread). */
static const char *cgroup2_mount(void)
{
    static char where[4096];
    static bool looked;
    if (looked)
        return where;
    looked = true;
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[8192], root[4096], dir[4096];
    while (f && !where[0] && fgets(line, sizeof(line), f)) {
        const char *dash = strstr(line, " - cgroup2 ");
        if (dash && sscanf(line, "%*s %*s %*s %4095s %4095s", root, dir) == 2 && strcmp(root, "/") == 0)
            snprintf(where, sizeof(where), "%s", dir);
    }
    if (f)
        fclose(f);
    return where;
}

int med_cgroup_populated(const char *path)
{
    const char *mount = cgroup2_mount();
    char events[8192], text[256];
    if (!mount[0] || path[0] != '/' || strstr(path, "/.."))
        return -1;
    snprintf(events, sizeof(events), "%s%s/cgroup.events", mount, path);
    int fd = open(events, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    text[n] = '\0';
    const char *p = strstr(text, "populated ");
    return p ? p[10] == '1' : -1;
}

int med_cgroup_move(const char *path, pid_t pid)
{
    const char *mount = cgroup2_mount();
    char procs[8192], text[32];
    if (!mount[0])
        return ENODEV;
    if (path[0] != '/' || strstr(path, "/.."))
        return EINVAL;
    snprintf(procs, sizeof(procs), "%s%s/cgroup.procs", mount, strcmp(path, "/") == 0 ? "" : path);
    int fd = open(procs, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno;
    int n = snprintf(text, sizeof(text), "%d", (int)pid);
    int e = write(fd, text, (size_t)n) == n ? 0 : errno;
    close(fd);
    return e;
}

static bool same_ns(pid_t pid, const char *ns, const char *than)
{
    char a[64], b[64];
    struct stat x, y;
    snprintf(a, sizeof(a), "/proc/%d/ns/%s", (int)pid, ns);
    snprintf(b, sizeof(b), "/proc/%s/ns/%s", than, ns);
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

bool med_host_namespaces(pid_t pid, bool mount)
{
    return same_ns(pid, "pid", "self") && (!mount || same_ns(pid, "mnt", "self") || same_ns(pid, "mnt", "1"));
}
