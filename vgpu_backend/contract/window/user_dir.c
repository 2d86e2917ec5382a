/* The directory of this user's own in /dev/shm; see user_dir.h. */
#define _GNU_SOURCE
#include "vgpu_backend/contract/window/user_dir.h"

#include "common/error.h"
#include "common/log.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Names tried past the plain one before giving up. */
#define MAX_SUFFIX 1000

/* Resolved once per process (pthread_once), read-only afterwards; owned by
 * this file.  A fork child keeps its parent's: the same user. */
static struct {
    int rc;
    char dir[64];
    char err[1024];
} resolved;
static pthread_once_t once = PTHREAD_ONCE_INIT;

enum whose { MINE, MINE_BUT_OPEN, OTHERS, MISSING };

static enum whose whose(const char *path, struct stat *st)
{
    if (lstat(path, st) != 0)
        return MISSING;
    if (!S_ISDIR(st->st_mode) || st->st_uid != geteuid())
        return OTHERS;
    return st->st_mode & 077 ? MINE_BUT_OPEN : MINE;
}

/* The smallest N for which base.N is this user's own directory, or 0. */
static unsigned existing(const char *base)
{
    const char *name = strrchr(base, '/') + 1;
    size_t n = strlen(name);
    DIR *d = opendir(VGPU_USER_DIR_ROOT);
    unsigned best = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        char *end;
        if (strncmp(e->d_name, name, n) != 0 || e->d_name[n] != '.')
            continue;
        unsigned long k = strtoul(e->d_name + n + 1, &end, 10);
        if (*end || k == 0 || k > MAX_SUFFIX || (best && k >= best))
            continue;
        char path[128];
        struct stat st;
        snprintf(path, sizeof(path), "%s.%lu", base, k);
        if (whose(path, &st) == MINE)
            best = (unsigned)k;
    }
    if (d)
        closedir(d);
    return best;
}

/* base.N for the first N that is this user's own or can be made so: 0, or -1. */
static int take_another(const char *base, char *out, size_t len)
{
    unsigned k = existing(base);
    for (unsigned i = k ? k : 1; i <= MAX_SUFFIX; i++) {
        struct stat st;
        snprintf(out, len, "%s.%u", base, i);
        if (mkdir(out, 0700) == 0 || (errno == EEXIST && whose(out, &st) == MINE))
            return 0;
    }
    return -1;
}

static void resolve(void)
{
    char base[48];
    struct stat st;
    snprintf(base, sizeof(base), "%s/vgpu-%u", VGPU_USER_DIR_ROOT, (unsigned)geteuid());
    snprintf(resolved.dir, sizeof(resolved.dir), "%s", base);
    if (mkdir(base, 0700) == 0)
        return;
    if (errno != EEXIST) {
        resolved.rc = vgpu_fail(resolved.err, sizeof(resolved.err), "cannot make %s, the directory of this user's "
                                "vGPU windows: %s; set VGPU_BAR0 to a file of your own", base, strerror(errno));
        return;
    }
    switch (whose(base, &st)) {
    case MINE:
        return;
    case MINE_BUT_OPEN:
        resolved.rc = vgpu_fail(resolved.err, sizeof(resolved.err), "%s, the directory of this user's vGPU windows, "
                                "is open to other users (mode %04o), who could change its vGPUs' limits: chmod 700 %s",
                                base, (unsigned)(st.st_mode & 07777), base);
        return;
    case MISSING: /* gone since mkdir said it was there */
        if (mkdir(base, 0700) == 0)
            return;
        break;
    case OTHERS:
        break;
    }
    if (take_another(base, resolved.dir, sizeof(resolved.dir)) != 0) {
        resolved.rc = vgpu_fail(resolved.err, sizeof(resolved.err), "%s and %s.1 to .%d are all taken by other "
                                "users: have an administrator remove them, or set VGPU_BAR0 to a file of your own",
                                base, base, MAX_SUFFIX);
        return;
    }
    vgpu_warn("%s, where this user's vGPU windows would live, is %s of uid %u (mode %04o), not this user's (uid %u): "
              "another user made it first, and it is never used; this user's are in %s instead. An administrator "
              "may remove it", base, S_ISDIR(st.st_mode) ? "a directory" : S_ISLNK(st.st_mode) ? "a symbolic link"
              : "a file", (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid(), resolved.dir);
}

int vgpu_user_dir(char *out, size_t len, char *err, size_t errlen)
{
    pthread_once(&once, resolve);
    if (resolved.rc != 0)
        return vgpu_fail(err, errlen, "%s", resolved.err);
    snprintf(out, len, "%s", resolved.dir);
    return 0;
}
