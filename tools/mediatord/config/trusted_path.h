/*
 * What the mediator trusts must be beyond other users' reach: its config
 * decides every vGPU, and its state_dir holds the journals a restart acts
 * on.  Whoever may write a directory on the way to such a file can
 * replace the file, so each directory up to / is checked too: owned by
 * root or the mediator's own uid, and writable by no one else (a sticky
 * directory, /tmp, lets others make entries but not replace one they do
 * not own, so it passes).
 */
#pragma once

#include <stddef.h>
#include <sys/stat.h>

/*
 * The config file st describes (at path): owned by root or the mediator's
 * uid, writable by no one else.  0, or -1 with what is wrong and the fix
 * in err.
 */
int med_trusted_file(const struct stat *st, const char *what, const char *path, char *err, size_t errlen);

/* The directories path is in, each up to /: 0, or -1 with the first that
 * is not trusted, why, and the fix in err (what names path's role). */
int med_trusted_dirs(const char *path, const char *what, char *err, size_t errlen);
