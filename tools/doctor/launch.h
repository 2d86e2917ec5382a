/*
 * vgpu-doctor -- COMMAND: runs COMMAND with the current environment (and
 * vgpu's libraries preloaded, with --preload), vgpu's log at info level in
 * a temporary file and the command's output in another, waits until vgpu
 * has joined a vGPU in it or one of its descendants (its status record
 * appears) so that the process can be inspected alive, and stops it at the
 * timeout.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tools/doctor/report.h"
#include "tools/lib/find_libs.h"

struct doc_run {
    char dir[PATH_MAX];  /* the temporary directory */
    char log[PATH_MAX + 16], out[PATH_MAX + 16];
    pid_t pid;
    bool exited, timed_out;
    int status;          /* wait status, once exited */
    double started, seconds;
};

/* Starts argv (its own process group); preload: NULL, or vgpu's libraries. 0, or -1 with err. */
int doc_run_start(struct doc_run *r, char **argv, const struct vgpu_libs *preload, char *err, size_t errlen);

/*
 * Waits until a process of the command's tree has a status record (returns
 * its pid), the command exits (returns 0), or timeout seconds have passed
 * since the start (returns the command's pid).
 */
pid_t doc_run_wait_ready(struct doc_run *r, double timeout);

/* Lets the command run until timeout, then stops its process group (TERM, then KILL); reaps it. */
void doc_run_finish(struct doc_run *r, double timeout);

/*
 * What the command did and what vgpu logged, as findings.  Lines containing
 * skip (a refusal the status record told already) are left out, and so are
 * joins when the record told them (recorded).
 */
void doc_run_report(const struct doc_run *r, struct doc_report *rep, const char *skip, bool recorded);

/* The log's vgpu lines as a JSON array (after the object's other members). */
void doc_run_json(const struct doc_run *r, FILE *f);

void doc_run_cleanup(struct doc_run *r);
