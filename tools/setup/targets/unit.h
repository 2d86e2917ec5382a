/*
 * What vgpu-setup must know of a systemd service before it writes a
 * drop-in for it: that the unit exists, what its ExecStart= runs, and the
 * LD_PRELOAD and LD_LIBRARY_PATH its own Environment= already sets (a
 * drop-in's assignment replaces them, so vgpu's are put in front of them).
 * Read from the unit file and its drop-ins the way systemd layers them.
 */
#pragma once

#include "tools/setup/setup.h"

#include <limits.h>
#include <stdbool.h>

#define SETUP_UNIT_NAME_MAX 256
#define SETUP_MAX_ENV_FILES 8

struct setup_unit {
    char name[SETUP_UNIT_NAME_MAX];   /* "ollama.service" */
    char file[PATH_MAX];              /* target path of its unit file; "" if none */
    bool masked;                      /* its unit file is a link to /dev/null */
    bool ollama;                      /* an ExecStart= runs a program named ollama */
    char user[64];                    /* its User=, "" for root */
    bool dynamic_user;                /* DynamicUser=yes: no user known in advance */
    bool has_preload, has_libpath;
    char preload[4096];               /* its LD_PRELOAD, when has_preload */
    char libpath[4096];               /* its LD_LIBRARY_PATH, when has_libpath */
    int nenv_files;
    char env_files[SETUP_MAX_ENV_FILES][PATH_MAX]; /* EnvironmentFile=, as written */
};

/* "ollama" or "ollama.service" -> "ollama.service"; -1 with err for a name
 * systemd would not take for a service. */
int setup_unit_name(const char *arg, char *name, size_t len, char *err, size_t errlen);

/* Reads the unit name (a setup_unit_name()) and its drop-ins, leaving out
 * any drop-in named vgpu.conf (vgpu-setup's own).  0, or -1 with err. */
int setup_unit_read(const struct setup_ctx *c, const char *name, struct setup_unit *u, char *err, size_t errlen);

/* The target path of vgpu-setup's drop-in for the service name. */
void setup_unit_dropin(const char *name, char *out, size_t len);

/* Splits a systemd value into words as systemd does (quotes, backslash
 * escapes, %% for %), in place; returns the count (at most max). */
int setup_unit_words(char *value, char **words, int max);
