/*
 * What `enable` changed, kept so that `disable` puts back exactly what was
 * there before: for each change (an id: "system", "service-NAME.service")
 * a manifest, the bytes of the file it replaced, and the bytes it wrote, in
 * /var/lib/vgpu/setup (under --root).  The manifest is written before the
 * target is touched and removed only after the target is restored, so an
 * interrupted run is finished by running the same command again.
 */
#pragma once

#include "tools/setup/record/files.h"
#include "tools/setup/setup.h"

#include <limits.h>
#include <stdbool.h>

enum setup_before { SETUP_BEFORE_ABSENT, SETUP_BEFORE_FILE, SETUP_BEFORE_SYMLINK };

struct setup_record {
    char id[300];
    char target[PATH_MAX];     /* target path of the file enable wrote */
    enum setup_before before;  /* what was at target before */
    struct setup_meta meta;    /* SETUP_BEFORE_FILE: its mode, owner, mtime */
    char link[PATH_MAX];       /* SETUP_BEFORE_SYMLINK: where it pointed */
    char created[PATH_MAX];    /* target path of the topmost directory enable created, or "" */
};

/* Takes vgpu-setup's lock (held until exit; again is a no-op): one run
 * changes a system at a time.  The state directory is made only when
 * create (an enable): without it, nothing was enabled and nothing is locked. */
int setup_lock(const struct setup_ctx *c, bool create, char *err, size_t errlen);

enum setup_install_result { SETUP_INSTALLED, SETUP_UPDATED, SETUP_UNCHANGED };

/* Puts text at target (a target path), recording what was there unless id is
 * already recorded.  An enum setup_install_result, or -1 with err. */
int setup_install(const struct setup_ctx *c, const char *id, const char *target, const char *text, size_t len,
                  char *err, size_t errlen);

/* Puts back what id's record says was there (into *was).  1 if restored, 0
 * if there is no record of id (nothing changed), -1 with err. */
int setup_restore(const struct setup_ctx *c, const char *id, enum setup_before *was, char *err, size_t errlen);

/* How a restore ends a sentence: "removed it (there was none before)", ... */
const char *setup_restored_what(enum setup_before was);

/* Tells the user that what (a service, "system") was never enabled, and
 * what to do about a file at real that vgpu-setup did not write (remove it,
 * then run then). */
void setup_say_not_enabled(const struct setup_ctx *c, const char *what, const char *real, const char *then);

/* Reads id's record: 1, 0 if there is none, -1 with err. */
int setup_record_read(const struct setup_ctx *c, const char *id, struct setup_record *r, char *err, size_t errlen);

/* Whether target still holds what vgpu-setup wrote there. */
bool setup_record_intact(const struct setup_ctx *c, const struct setup_record *r);

/* The state directory's real path (for messages), into out. */
void setup_state_dir(const struct setup_ctx *c, char *out, size_t len);
