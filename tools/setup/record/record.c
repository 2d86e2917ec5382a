/* See record.h. */
#define _GNU_SOURCE
#include "tools/setup/record/record.h"

#include "common/error.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void setup_state_dir(const struct setup_ctx *c, char *out, size_t len)
{
    if (setup_path(c, SETUP_STATE_DIR, out, len) != 0)
        out[0] = '\0';
}

/* STATE/ID.SUFFIX */
static int state_file(const struct setup_ctx *c, const char *id, const char *suffix, char *out, size_t len)
{
    return (size_t)snprintf(out, len, "%s%s/%s.%s", c->root, SETUP_STATE_DIR, id, suffix) < len ? 0 : -1;
}

int setup_lock(const struct setup_ctx *c, bool create, char *err, size_t errlen)
{
    static bool locked; /* this process's only lock, held until it exits */
    if (locked)
        return 0;
    char dir[PATH_MAX], lock[PATH_MAX + 8];
    setup_state_dir(c, dir, sizeof(dir));
    snprintf(lock, sizeof(lock), "%s/lock", dir);
    if (!create && access(dir, F_OK) != 0)
        return 0;
    if (setup_make_parents(lock, err, errlen) != 0)
        return -1;
    chmod(dir, 0700); /* backups of files that may hold secrets (a unit's Environment=) */
    /* Kept open, and so locked, until the process exits. */
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return vgpu_fail(err, errlen, "cannot open %s: %s", lock, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK)
            return vgpu_fail(err, errlen, "cannot lock %s: %s", lock, strerror(errno));
        fprintf(stderr, "vgpu-setup: waiting for another vgpu-setup (it holds %s)\n", lock);
        if (flock(fd, LOCK_EX) != 0)
            return vgpu_fail(err, errlen, "cannot lock %s: %s", lock, strerror(errno));
    }
    locked = true;
    return 0;
}

static const char *before_names[] = { "absent", "file", "symlink" };

static int write_manifest(const struct setup_ctx *c, const struct setup_record *r, char *err, size_t errlen)
{
    char text[3 * PATH_MAX + 512], path[PATH_MAX];
    int n = snprintf(text, sizeof(text),
                     "# vgpu-setup's record of one change, read by `vgpu-setup disable`; do not edit.\n"
                     "target=%s\nbefore=%s\nmode=%04o\nuid=%u\ngid=%u\nmtime=%lld.%09ld\nlink=%s\ncreated=%s\n",
                     r->target, before_names[r->before], (unsigned)r->meta.mode, (unsigned)r->meta.uid,
                     (unsigned)r->meta.gid, (long long)r->meta.mtime.tv_sec, r->meta.mtime.tv_nsec, r->link,
                     r->created);
    if (n < 0 || (size_t)n >= sizeof(text) || state_file(c, r->id, "manifest", path, sizeof(path)) != 0)
        return vgpu_fail(err, errlen, "the record of %s is too long", r->id);
    struct setup_meta private = { .mode = 0600, .uid = geteuid(), .gid = getegid(), .mtime.tv_nsec = UTIME_OMIT };
    return setup_write_atomic(path, text, (size_t)n, &private, err, errlen);
}

int setup_record_read(const struct setup_ctx *c, const char *id, struct setup_record *r, char *err, size_t errlen)
{
    char path[PATH_MAX], *text;
    size_t len;
    memset(r, 0, sizeof(*r));
    snprintf(r->id, sizeof(r->id), "%s", id);
    if (state_file(c, id, "manifest", path, sizeof(path)) != 0)
        return vgpu_fail(err, errlen, "name too long: %s", id);
    int e = setup_read(path, &text, &len, err, errlen);
    if (e == -ENOENT)
        return 0;
    if (e != 0)
        return -1;
    bool have_before = false;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq)
            continue;
        *eq = '\0';
        const char *k = line, *v = eq + 1;
        if (strcmp(k, "target") == 0)
            snprintf(r->target, sizeof(r->target), "%s", v);
        else if (strcmp(k, "link") == 0)
            snprintf(r->link, sizeof(r->link), "%s", v);
        else if (strcmp(k, "created") == 0)
            snprintf(r->created, sizeof(r->created), "%s", v);
        else if (strcmp(k, "mode") == 0)
            r->meta.mode = (mode_t)strtoul(v, NULL, 8);
        else if (strcmp(k, "uid") == 0)
            r->meta.uid = (uid_t)strtoul(v, NULL, 10);
        else if (strcmp(k, "gid") == 0)
            r->meta.gid = (gid_t)strtoul(v, NULL, 10);
        else if (strcmp(k, "mtime") == 0) {
            char *dot;
            r->meta.mtime.tv_sec = (time_t)strtoll(v, &dot, 10);
            r->meta.mtime.tv_nsec = *dot == '.' ? strtol(dot + 1, NULL, 10) : 0;
        } else if (strcmp(k, "before") == 0) {
            for (int i = 0; i < 3; i++)
                if (strcmp(v, before_names[i]) == 0) {
                    r->before = (enum setup_before)i;
                    have_before = true;
                }
        }
    }
    free(text);
    if (!r->target[0] || r->target[0] != '/' || !have_before)
        return vgpu_fail(err, errlen, "%s is not a record vgpu-setup can read; it was changed by hand", path);
    return 1;
}

/* Reads what the target file holds now: 0, -ENOENT, or -1 (also for a
 * target that is not a regular file, with why in err). */
static int read_target(const char *real, char **data, size_t *len, char *err, size_t errlen)
{
    struct stat st;
    *data = NULL;
    if (lstat(real, &st) != 0)
        return errno == ENOENT ? -ENOENT : vgpu_fail(err, errlen, "%s: %s", real, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return vgpu_fail(err, errlen, "%s is no longer a regular file", real);
    return setup_read(real, data, len, err, errlen);
}

bool setup_record_intact(const struct setup_ctx *c, const struct setup_record *r)
{
    char real[PATH_MAX], written[PATH_MAX], err[512], *now = NULL, *ours = NULL;
    size_t nowlen = 0, ourlen = 0;
    bool same = setup_path(c, r->target, real, sizeof(real)) == 0 &&
                state_file(c, r->id, "written", written, sizeof(written)) == 0 &&
                read_target(real, &now, &nowlen, err, sizeof(err)) == 0 &&
                setup_read(written, &ours, &ourlen, err, sizeof(err)) == 0 &&
                setup_same_bytes(now, nowlen, ours, ourlen);
    free(now);
    free(ours);
    return same;
}

/* What is at real now, into r (before anything is changed). */
static int note_before(const char *real, struct setup_record *r, char *before_copy, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(real, &st) != 0) {
        if (errno != ENOENT)
            return vgpu_fail(err, errlen, "%s: %s", real, strerror(errno));
        r->before = SETUP_BEFORE_ABSENT;
        return 0;
    }
    if (S_ISLNK(st.st_mode)) {
        ssize_t n = readlink(real, r->link, sizeof(r->link) - 1);
        if (n < 0 || (size_t)n >= sizeof(r->link) - 1 || memchr(r->link, '\n', (size_t)n))
            return vgpu_fail(err, errlen, "cannot read the symbolic link %s", real);
        r->link[n] = '\0';
        r->before = SETUP_BEFORE_SYMLINK;
        return 0;
    }
    if (!S_ISREG(st.st_mode))
        return vgpu_fail(err, errlen, "%s is neither a file nor a symbolic link; move it away first", real);
    char *bytes;
    size_t len;
    if (setup_read(real, &bytes, &len, err, errlen) != 0)
        return -1;
    r->before = SETUP_BEFORE_FILE;
    r->meta = (struct setup_meta){ .mode = st.st_mode & 07777, .uid = st.st_uid, .gid = st.st_gid,
                                   .mtime = st.st_mtim };
    /* Only its owner may read the copy: the file may hold secrets. */
    struct setup_meta private = { .mode = 0600, .uid = geteuid(), .gid = getegid(), .mtime.tv_nsec = UTIME_OMIT };
    int rc = setup_write_atomic(before_copy, bytes, len, &private, err, errlen);
    free(bytes);
    return rc;
}

int setup_install(const struct setup_ctx *c, const char *id, const char *target, const char *text, size_t len,
                  char *err, size_t errlen)
{
    char real[PATH_MAX], before_copy[PATH_MAX], written[PATH_MAX];
    if (setup_path(c, target, real, sizeof(real)) != 0 || state_file(c, id, "before", before_copy, sizeof(before_copy)) ||
        state_file(c, id, "written", written, sizeof(written)))
        return vgpu_fail(err, errlen, "path too long: %s%s", c->root, target);
    if (setup_lock(c, true, err, errlen) != 0)
        return -1;
    struct setup_record r;
    int have = setup_record_read(c, id, &r, err, errlen);
    if (have < 0)
        return -1;
    struct setup_meta private = { .mode = 0600, .uid = geteuid(), .gid = getegid(), .mtime.tv_nsec = UTIME_OMIT };
    if (have) {
        if (strcmp(r.target, target) != 0)
            return vgpu_fail(err, errlen, "the record of %s names %s, not %s; run `vgpu-setup disable` for it first",
                             id, r.target, target);
        char *now;
        size_t nowlen;
        int e = read_target(real, &now, &nowlen, err, errlen);
        bool same = e == 0 && setup_same_bytes(now, nowlen, text, len);
        free(now);
        if (same)
            return SETUP_UNCHANGED;
        if (!setup_record_intact(c, &r) && e != -ENOENT)
            setup_warn("%s was changed since vgpu-setup wrote it; replacing it (what was there before vgpu-setup "
                       "is still kept for `vgpu-setup disable`)", real);
        if (setup_write_atomic(written, text, len, &private, err, errlen) != 0 ||
            setup_make_parents(real, err, errlen) != 0 || setup_write_atomic(real, text, len, NULL, err, errlen) != 0)
            return -1;
        return SETUP_UPDATED;
    }

    memset(&r, 0, sizeof(r));
    snprintf(r.id, sizeof(r.id), "%s", id);
    snprintf(r.target, sizeof(r.target), "%s", target);
    r.meta.mtime.tv_nsec = UTIME_OMIT;
    char top[PATH_MAX];
    setup_missing_parent(real, top, sizeof(top));
    if (top[0])
        snprintf(r.created, sizeof(r.created), "%s", top + strlen(c->root));
    /* The order matters: the copy of what was there and the record that
     * names it are on disk before the target changes. */
    if (note_before(real, &r, before_copy, err, errlen) != 0 ||
        setup_write_atomic(written, text, len, &private, err, errlen) != 0 || write_manifest(c, &r, err, errlen) != 0)
        return -1;
    if (setup_make_parents(real, err, errlen) != 0 || setup_write_atomic(real, text, len, NULL, err, errlen) != 0)
        return -1;
    return SETUP_INSTALLED;
}

const char *setup_restored_what(enum setup_before was)
{
    return was == SETUP_BEFORE_ABSENT ? "removed it (there was none before)"
           : was == SETUP_BEFORE_FILE ? "put back the file that was there before, byte for byte"
                                      : "put back the symbolic link that was there before";
}

void setup_say_not_enabled(const struct setup_ctx *c, const char *what, const char *real, const char *then)
{
    char state[PATH_MAX];
    setup_state_dir(c, state, sizeof(state));
    if (access(real, F_OK) == 0)
        setup_say("%s: vgpu-setup has not enabled it (no record in %s), so nothing was changed; %s was not written "
                  "by vgpu-setup: remove it by hand, then %s", what, state, real, then);
    else
        setup_say("%s: vgpu-setup has not enabled it (no record in %s); nothing changed", what, state);
}

int setup_restore(const struct setup_ctx *c, const char *id, enum setup_before *was, char *err, size_t errlen)
{
    if (setup_lock(c, false, err, errlen) != 0)
        return -1;
    struct setup_record r;
    int have = setup_record_read(c, id, &r, err, errlen);
    if (have <= 0)
        return have;
    *was = r.before;
    char real[PATH_MAX], before_copy[PATH_MAX], written[PATH_MAX], manifest[PATH_MAX], changed[PATH_MAX];
    if (setup_path(c, r.target, real, sizeof(real)) != 0 || state_file(c, id, "before", before_copy, sizeof(before_copy)) ||
        state_file(c, id, "written", written, sizeof(written)) || state_file(c, id, "manifest", manifest, sizeof(manifest)) ||
        state_file(c, id, "changed", changed, sizeof(changed)))
        return vgpu_fail(err, errlen, "path too long: %s%s", c->root, r.target);

    /* Someone edited vgpu-setup's file: their edit goes with it, but not silently. */
    char *now;
    size_t nowlen;
    int e = read_target(real, &now, &nowlen, err, errlen);
    if (e != -ENOENT && !setup_record_intact(c, &r)) {
        struct setup_meta private = { .mode = 0600, .uid = geteuid(), .gid = getegid(), .mtime.tv_nsec = UTIME_OMIT };
        if (e == 0 && setup_write_atomic(changed, now, nowlen, &private, err, errlen) == 0)
            setup_warn("%s was changed since vgpu-setup wrote it; the changed file is kept as %s", real, changed);
        else
            setup_warn("%s was changed since vgpu-setup wrote it; replacing it with what was there before", real);
    }
    free(now);

    switch (r.before) {
    case SETUP_BEFORE_ABSENT: {
        char top[PATH_MAX] = "";
        if (r.created[0] && setup_path(c, r.created, top, sizeof(top)) != 0)
            return vgpu_fail(err, errlen, "path too long: %s%s", c->root, r.created);
        if (setup_remove(real, top, err, errlen) != 0)
            return -1;
        break;
    }
    case SETUP_BEFORE_FILE: {
        char *bytes;
        size_t len;
        int got = setup_make_parents(real, err, errlen) != 0 ? -1 : setup_read(before_copy, &bytes, &len, err, errlen);
        if (got == -ENOENT)
            return vgpu_fail(err, errlen, "the copy of %s that enable kept, %s, is missing", real, before_copy);
        if (got != 0)
            return -1;
        int rc = setup_write_atomic(real, bytes, len, &r.meta, err, errlen);
        free(bytes);
        if (rc != 0)
            return -1;
        break;
    }
    case SETUP_BEFORE_SYMLINK:
        if (setup_make_parents(real, err, errlen) != 0 || setup_symlink_atomic(real, r.link, err, errlen) != 0)
            return -1;
        break;
    }
    unlink(before_copy);
    unlink(written);
    if (unlink(manifest) != 0 && errno != ENOENT)
        return vgpu_fail(err, errlen, "restored %s, but cannot remove %s: %s", real, manifest, strerror(errno));
    return 1;
}
