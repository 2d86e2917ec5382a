/* Reading /proc/PID; see proc.h. */
#define _GNU_SOURCE
#include "tools/doctor/proc.h"

#include "common/contract/window/proc_fd.h"
#include "common/contract/window/status_page.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void doc_shell_word(char *out, size_t len, const char *w)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-";
    size_t used = strlen(out);
    if (*w && w[strspn(w, safe)] == '\0') {
        snprintf(out + used, len - used, "%s", w);
        return;
    }
    /* '...', each ' as '\'' */
    char q[4096] = "'";
    size_t n = 1;
    for (; *w && n + 6 < sizeof(q); w++) {
        if (*w == '\'') {
            memcpy(q + n, "'\\''", 4);
            n += 4;
        } else {
            q[n++] = *w;
        }
    }
    q[n++] = '\'';
    q[n] = '\0';
    snprintf(out + used, len - used, "%s", q);
}

/* "Key:\tA\tB..." of status: the numbers after key, at most max; how many. */
static int status_numbers(const char *status, const char *key, unsigned long *v, int max)
{
    char want[32];
    snprintf(want, sizeof(want), "\n%s:", key);
    const char *at = strstr(status, want);
    if (!at)
        return 0;
    at += strlen(want);
    int n = 0;
    while (n < max) {
        char *end;
        while (*at == ' ' || *at == '\t')
            at++;
        if (*at < '0' || *at > '9')
            break;
        v[n++] = strtoul(at, &end, 10);
        at = end;
    }
    return n;
}

static void parse_status(const char *s, struct doc_proc *p)
{
    /* A newline first, so every key (Name: too) follows one. */
    char *text = malloc(strlen(s) + 2);
    if (!text)
        return;
    text[0] = '\n';
    strcpy(text + 1, s);
    const char *name = strstr(text, "\nName:");
    if (name) {
        name += 6;
        name += strspn(name, " \t");
        snprintf(p->name, sizeof(p->name), "%.*s", (int)strcspn(name, "\n"), name);
    }
    unsigned long v[DOC_MAX_GROUPS];
    if (status_numbers(text, "PPid", v, 1) == 1)
        p->ppid = (int)v[0];
    if (status_numbers(text, "Uid", v, 2) == 2) {
        p->uid = (uid_t)v[0];
        p->euid = (uid_t)v[1];
    }
    if (status_numbers(text, "Gid", v, 2) == 2) {
        p->gid = (gid_t)v[0];
        p->egid = (gid_t)v[1];
    }
    p->ngroups = status_numbers(text, "Groups", v, DOC_MAX_GROUPS);
    for (int i = 0; i < p->ngroups; i++)
        p->groups[i] = (gid_t)v[i];
    free(text);
}

int doc_proc_load(const struct doc_fs *fs, int pid, struct doc_proc *p)
{
    char path[64], *data;
    size_t len;
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    int e = doc_fs_read(fs, path, &data, &len);
    if (e)
        return e;
    parse_status(data, p);
    free(data);

    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    if (doc_fs_read(fs, path, &data, &len) == 0) {
        for (size_t at = 0; at < len; at += strlen(data + at) + 1) {
            if (at)
                strncat(p->command, " ", sizeof(p->command) - strlen(p->command) - 1);
            doc_shell_word(p->command, sizeof(p->command), data + at);
        }
        free(data);
    }
    if (!p->command[0])
        snprintf(p->command, sizeof(p->command), "%s", p->name);

    snprintf(path, sizeof(path), "/proc/%d/environ", pid);
    p->env_errno = doc_fs_read(fs, path, &p->env, &p->envlen);
    if (p->env_errno)
        p->env = NULL;
    return 0;
}

void doc_proc_free(struct doc_proc *p)
{
    free(p->env);
    p->env = NULL;
}

const char *doc_proc_getenv(const struct doc_proc *p, const char *name)
{
    size_t n = strlen(name);
    for (size_t at = 0; p->env && at < p->envlen; at += strlen(p->env + at) + 1)
        if (strncmp(p->env + at, name, n) == 0 && p->env[at + n] == '=')
            return p->env + at + n + 1;
    return NULL;
}

int doc_proc_auxv(const struct doc_fs *fs, int pid, unsigned long type, unsigned long *value)
{
    char path[64], *data;
    size_t len;
    snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
    if (doc_fs_read(fs, path, &data, &len) != 0)
        return -1;
    int found = -1;
    for (size_t at = 0; at + 2 * sizeof(unsigned long) <= len; at += 2 * sizeof(unsigned long)) {
        unsigned long pair[2];
        memcpy(pair, data + at, sizeof(pair));
        if (pair[0] == type) {
            *value = pair[1];
            found = 0;
            break;
        }
    }
    free(data);
    return found;
}

int doc_proc_record(const struct doc_fs *fs, int pid, char *text, size_t len)
{
    char dir[64], full[PATH_MAX * 2];
    snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
    int fd = vgpu_proc_fd_open(doc_fs_path(fs, dir, full, sizeof(full)), VGPU_STATUS_PAGE_LINK);
    if (fd < 0) {
        text[0] = '\0';
        return fd;
    }
    ssize_t got = pread(fd, text, len - 1, 0);
    int result = got >= 0 ? (int)got : -errno;
    text[got > 0 ? got : 0] = '\0';
    close(fd);
    return result;
}
