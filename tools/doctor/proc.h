/* What /proc says about a process, read under the doctor's root. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tools/doctor/fsroot.h"

#define DOC_MAX_GROUPS 256

struct doc_proc {
    int pid, ppid;
    uid_t uid, euid;
    gid_t gid, egid;
    int ngroups;
    gid_t groups[DOC_MAX_GROUPS];
    char name[64];       /* status's Name */
    char command[4096];  /* cmdline, quoted for a shell */
    char *env;           /* environ: NUL-separated; NULL when unreadable */
    size_t envlen;
    int env_errno;       /* why env is NULL */
};

/* Reads status, cmdline and environ of pid: 0, or an errno (ENOENT: no such process). */
int doc_proc_load(const struct doc_fs *fs, int pid, struct doc_proc *p);
void doc_proc_free(struct doc_proc *p);

/* A variable of the process's environment, or NULL. */
const char *doc_proc_getenv(const struct doc_proc *p, const char *name);

/* The value of auxv entry type (AT_SECURE...): 0/1 and *value, -1 if unknown. */
int doc_proc_auxv(const struct doc_fs *fs, int pid, unsigned long type, unsigned long *value);

/*
 * Reads pid's status record (common/contract/window/status_page.h), found among its
 * descriptors, into text (len bytes, NUL-terminated): its length, or
 * -ENOENT when it has none, or another -errno.
 */
int doc_proc_record(const struct doc_fs *fs, int pid, char *text, size_t len);

/* Appends word to out (len bytes), quoted so that a POSIX shell reads it back as one word. */
void doc_shell_word(char *out, size_t len, const char *word);
