/* The directory of this user's own in /dev/shm; see user_dir.h. */
#define _GNU_SOURCE
#include "common/contract/window/user_dir.h"

#include "common/error.h"
#include "common/log.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Numbered names tried before an unpredictable one. */
#define MAX_SUFFIX 64

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
    if (lstat(path, st) != 0) {
        memset(st, 0, sizeof(*st));
        return MISSING;
    }
    if (!S_ISDIR(st->st_mode) || st->st_uid != geteuid())
        return OTHERS;
    return st->st_mode & 077 ? MINE_BUT_OPEN : MINE;
}

/* Orders the names that may stand in for base: base.1, .2, ... by number,
 * then any other base.SUFFIX by name. */
static bool before(const char *a, const char *b)
{
    char *ea, *eb;
    unsigned long na = strtoul(a, &ea, 10), nb = strtoul(b, &eb, 10);
    bool numbered_a = *a && !*ea, numbered_b = *b && !*eb;
    if (numbered_a != numbered_b)
        return numbered_a;
    return numbered_a ? na < nb : strcmp(a, b) < 0;
}

/* The first (as before() orders them) base.SUFFIX in /dev/shm that is this
 * user's own directory, in out; false if there is none. */
static bool existing(const char *base, char *out, size_t len)
{
    const char *name = strrchr(base, '/') + 1;
    size_t n = strlen(name);
    DIR *d = opendir(VGPU_USER_DIR_ROOT);
    char best[NAME_MAX + 1] = "";
    for (struct dirent *e; d && (e = readdir(d));) {
        const char *suffix = e->d_name + n + 1;
        if (strncmp(e->d_name, name, n) != 0 || e->d_name[n] != '.' || !*suffix || (best[0] && !before(suffix, best)))
            continue;
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof(path), "%s.%s", base, suffix);
        if (whose(path, &st) == MINE)
            snprintf(best, sizeof(best), "%s", suffix);
    }
    if (d)
        closedir(d);
    if (best[0])
        snprintf(out, len, "%s.%s", base, best);
    return best[0] != '\0';
}

/* A name of this user's own in place of base: the first numbered one that
 * is free, else (all taken by others) one nobody can guess.  0, or -1. */
static int take_another(const char *base, char *out, size_t len)
{
    for (unsigned i = 1; i <= MAX_SUFFIX; i++) {
        struct stat st;
        snprintf(out, len, "%s.%u", base, i);
        if (mkdir(out, 0700) == 0 || (errno == EEXIST && whose(out, &st) == MINE))
            return 0;
    }
    snprintf(out, len, "%s.XXXXXX", base);
    return mkdtemp(out) ? 0 : -1;
}

static void resolve(void)
{
    char base[48];
    struct stat st;
    snprintf(base, sizeof(base), "%s/vgpu-%u", VGPU_USER_DIR_ROOT, (unsigned)geteuid());
    snprintf(resolved.dir, sizeof(resolved.dir), "%s", base);
    switch (whose(base, &st)) {
    case MINE:
        return;
    case MINE_BUT_OPEN:
        resolved.rc = vgpu_fail(resolved.err, sizeof(resolved.err), "%s, the directory of this user's vGPU windows, "
                                "is open to other users (mode %04o), who could change its vGPUs' limits: chmod 700 %s",
                                base, (unsigned)(st.st_mode & 07777), base);
        return;
    case MISSING:
    case OTHERS:
        break;
    }
    /* One taken in its place before (another user had made base first)
     * is still the one: the user's processes must not split between two. */
    bool found = existing(base, resolved.dir, sizeof(resolved.dir));
    if (!found && (mkdir(base, 0700) == 0 || (errno == EEXIST && whose(base, &st) == MINE)))
        return;
    if (!found && errno != EEXIST && whose(base, &st) == MISSING) {
        resolved.rc = vgpu_fail(resolved.err, sizeof(resolved.err), "cannot make %s, the directory of this user's "
                                "vGPU windows: %s; set VGPU_BAR0 to a file of your own", base, strerror(errno));
        return;
    }
    if (found && whose(base, &st) != OTHERS)
        return; /* base came free since: the one in use stays */
    if (!found && take_another(base, resolved.dir, sizeof(resolved.dir)) != 0) {
        resolved.rc = vgpu_fail(resolved.err, sizeof(resolved.err), "%s is another user's, and no directory of this "
                                "user's own could be made in its place: %s; set VGPU_BAR0 to a file of your own",
                                base, strerror(errno));
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
