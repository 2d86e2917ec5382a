/* The rooted ld.so configuration; see ldconf.h. */
#define _GNU_SOURCE
#include "tools/doctor/ldconf.h"

#include "forwarder/ldso.h"

#include <ctype.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LD_SO_CONF "/etc/ld.so.conf"

struct relay {
    doc_conf_fn fn;
    void *ctx;
    const char *file;
    int stop;
};

static int relay_dir(const char *dir, void *ctx)
{
    struct relay *r = ctx;
    return r->stop = r->fn(dir, r->file, r->ctx);
}

/* An include line's files, below the root, in glob's (sorted) order. */
static void include(const struct doc_fs *fs, const char *pattern, struct relay *r)
{
    char full[PATH_MAX * 2];
    /* ld.so.conf's relative includes are relative to /etc. */
    if (pattern[0] == '/')
        doc_fs_path(fs, pattern, full, sizeof(full));
    else
        snprintf(full, sizeof(full), "%s/etc/%s", fs->root, pattern);
    glob_t g;
    if (glob(full, 0, NULL, &g) != 0)
        return;
    size_t skip = strlen(fs->root);
    for (size_t i = 0; !r->stop && i < g.gl_pathc; i++) {
        r->file = g.gl_pathv[i] + skip;
        /* Nested includes are the parser's: relative ones stay below the root. */
        vgpu_ldso_conf_dirs(g.gl_pathv[i], relay_dir, r);
    }
    globfree(&g);
}

void doc_conf_dirs(const struct doc_fs *fs, doc_conf_fn fn, void *ctx)
{
    char path[PATH_MAX * 2], line[4096];
    FILE *f = fopen(doc_fs_path(fs, LD_SO_CONF, path, sizeof(path)), "re");
    if (!f)
        return;
    struct relay r = { fn, ctx, LD_SO_CONF, 0 };
    while (!r.stop && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "#\n")] = '\0';
        char *s = line + strspn(line, " \t");
        size_t n = strlen(s);
        while (n && isspace((unsigned char)s[n - 1]))
            s[--n] = '\0';
        if (strncmp(s, "include", 7) == 0 && isspace((unsigned char)s[7])) {
            include(fs, s + 8 + strspn(s + 8, " \t"), &r);
        } else if (s[0] == '/') {
            s[strcspn(s, "= \t")] = '\0'; /* "dir=TYPE" still names dir */
            r.file = LD_SO_CONF;
            relay_dir(s, &r);
        }
    }
    fclose(f);
}
