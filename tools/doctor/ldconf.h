/*
 * The ld.so configuration of a rooted file system, in the loader's order:
 * /etc/ld.so.conf with its include globs read below the root, each
 * included file through forwarder/ldso.c's parser.
 */
#pragma once

#include "tools/doctor/fsroot.h"

/* Called per directory with the file (inside fs) that lists it; non-zero stops. */
typedef int (*doc_conf_fn)(const char *dir, const char *file, void *ctx);

void doc_conf_dirs(const struct doc_fs *fs, doc_conf_fn fn, void *ctx);
