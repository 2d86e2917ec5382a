/*
 * Loads vgpu makes on a caller's behalf (dlopen.c): those whose new objects
 * must be rebound (rebind.c) before anyone uses them, which vgpu cannot do
 * once a thunk has tail-jumped into the C library.  glibc resolves a bare
 * name with its caller's RPATH and RUNPATH, and $ORIGIN with the caller's
 * directory; the caller it sees here is vgpu.  So the name is first made
 * what the original caller would have opened: $ORIGIN expanded, and a bare
 * name found in the caller's own search directories (those vgpu's search
 * lacks) turned into that file's path.  Otherwise vgpu's search is the
 * caller's: LD_LIBRARY_PATH, the ld.so cache, the default directories.
 */
#define _GNU_SOURCE
#include "interpose/open_for_caller.h"

#include "forwarder/pathfinder.h"
#include "interpose/rebind.h"

#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct link_map *map_of(const void *addr)
{
    Dl_info di;
    struct link_map *lm = NULL;
    return dladdr1(addr, &di, (void **)&lm, RTLD_DL_LINKMAP) ? lm : NULL;
}

/* file with $ORIGIN and ${ORIGIN} expanded as the caller's loader would. */
static const char *expand_origin(const char *file, struct link_map *caller, char *buf, size_t len)
{
    if (!strstr(file, "$ORIGIN") && !strstr(file, "${ORIGIN}"))
        return file;
    char origin[PATH_MAX] = ".";
    if (caller)
        dlinfo((void *)caller, RTLD_DI_ORIGIN, origin);
    size_t used = 0;
    for (const char *p = file; *p && used + 1 < len;) {
        size_t skip = strncmp(p, "${ORIGIN}", 9) == 0 ? 9 : strncmp(p, "$ORIGIN", 7) == 0 ? 7 : 0;
        if (skip) {
            used += (size_t)snprintf(buf + used, len - used, "%s", origin);
            p += skip;
        } else {
            buf[used++] = *p++;
        }
    }
    buf[used < len ? used : len - 1] = '\0';
    return buf;
}

/* lm's search directories, in the loader's order (free the result). */
static Dl_serinfo *search_dirs(struct link_map *lm)
{
    Dl_serinfo size;
    if (!lm || dlinfo(lm, RTLD_DI_SERINFOSIZE, &size) != 0)
        return NULL;
    Dl_serinfo *si = malloc(size.dls_size);
    if (!si)
        return NULL;
    si->dls_size = size.dls_size;
    si->dls_cnt = size.dls_cnt;
    if (dlinfo(lm, RTLD_DI_SERINFO, si) != 0) {
        free(si);
        return NULL;
    }
    return si;
}

/*
 * The first file named name in the caller's own search directories: its
 * RPATHs and RUNPATH, the directories before the tail its list shares with
 * vgpu's own (LD_LIBRARY_PATH and the default directories).  NULL where
 * none holds it.
 */
static const char *in_callers_dirs(const char *name, struct link_map *caller, char *buf, size_t len)
{
    Dl_serinfo *theirs = search_dirs(caller), *mine = search_dirs(map_of((void *)map_of));
    const char *found = NULL;
    if (theirs && mine) {
        unsigned shared = 0;
        while (shared < theirs->dls_cnt && shared < mine->dls_cnt &&
               strcmp(theirs->dls_serpath[theirs->dls_cnt - 1 - shared].dls_name,
                      mine->dls_serpath[mine->dls_cnt - 1 - shared].dls_name) == 0)
            shared++;
        for (unsigned i = 0; !found && i < theirs->dls_cnt - shared; i++) {
            int n = snprintf(buf, len, "%s/%s", theirs->dls_serpath[i].dls_name, name);
            if (n > 0 && (size_t)n < len && access(buf, F_OK) == 0)
                found = buf;
        }
    }
    free(theirs);
    free(mine);
    return found;
}

void *vgpu_open_for_caller(Lmid_t lmid, const char *file, int mode, const void *caller)
{
    char expanded[PATH_MAX], found[PATH_MAX];
    /* glibc takes a caller in no object for the main program, the first in the base namespace. */
    struct link_map *lm = map_of(caller);
    if (!lm)
        lm = _r_debug.r_map;
    const char *name = file && *file ? expand_origin(file, lm, expanded, sizeof(expanded)) : file;
    if (name && *name && !strchr(name, '/')) {
        /* A name already loaded in the namespace answers whoever asks. */
        void *loaded = lmid == LM_ID_NEWLM ? NULL : vgpu_real_dlmopen()(lmid, name, RTLD_LAZY | RTLD_NOLOAD);
        if (loaded)
            dlclose(loaded); /* only drops the reference this lookup took */
        else if (in_callers_dirs(name, lm, found, sizeof(found)))
            name = found;
    }
    if (lmid != LM_ID_BASE) {
        void *h = vgpu_real_dlmopen()(lmid, name, mode);
        if (h)
            vgpu_rebind_namespace(h);
        return h;
    }
    struct vgpu_loaded_set before;
    vgpu_loaded_set_take(&before); /* without memory, every object counts as new: rebinding more is harmless */
    void *h = vgpu_real_dlmopen()(LM_ID_BASE, name, mode);
    if (h)
        vgpu_rebind_new_objects(&before);
    vgpu_loaded_set_free(&before);
    return h;
}
