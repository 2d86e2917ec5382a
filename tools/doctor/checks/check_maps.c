/*
 * Which libcuda and libnvidia-ml the process mapped (/proc/PID/maps), and
 * whether each is vgpu or the driver.  vgpu and the driver together is
 * normal: vgpu's forwarder loads the driver behind itself.  The driver
 * without vgpu is the problem this tool exists for.
 */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DELETED " (deleted)"

struct mapped {
    char vgpu[PATH_MAX], driver[PATH_MAX], stub[PATH_MAX], other[PATH_MAX];
    bool replaced; /* a library file changed on disk since it was mapped */
};

static void note(struct doc_ctx *c, struct mapped *m, char *path)
{
    int which = doc_which_by_name(path);
    if (which < 0)
        return;
    size_t n = strlen(path), d = strlen(DELETED);
    bool deleted = n > d && strcmp(path + n - d, DELETED) == 0;
    if (deleted)
        path[n - d] = '\0';
    char *slot;
    switch (doc_classify(&c->fs, path, (enum doc_which)which)) {
    case DOC_LIB_VGPU: slot = m[which].vgpu; break;
    case DOC_LIB_DRIVER: slot = m[which].driver; break;
    case DOC_LIB_STUB: slot = m[which].stub; break;
    case DOC_LIB_OTHER: slot = m[which].other; break;
    default:
        /* Gone from disk: judge by name; vgpu's own files are named libvgpu-*. */
        m[which].replaced = true;
        slot = strstr(path, "libvgpu-") ? m[which].vgpu : m[which].driver;
    }
    if (!slot[0])
        snprintf(slot, PATH_MAX, "%s", path);
}

static void report(struct doc_ctx *c, enum doc_which w, const struct mapped *m)
{
    const char *label = doc_libs[w].label;
    char hint[8192], install[8192];
    c->vgpu_mapped[w] = m->vgpu[0];
    c->driver_mapped[w] = m->driver[0];
    if (m->stub[0])
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "libraries",
                        "%s: the CUDA toolkit's link-time stub %s is mapped: every call of it fails "
                        "(CUDA_ERROR_STUB_LIBRARY)", label, m->stub),
                "take the toolkit's stubs directory out of LD_LIBRARY_PATH and the ld.so configuration");
    if (m->other[0])
        doc_fix(doc_add(&c->report, DOC_WARNING, "libraries",
                        "%s: %s is mapped under the library's name but is neither vgpu nor a driver", label, m->other),
                "find what installed it (dpkg -S %s) and remove it from the process's library path", m->other);
    if (m->vgpu[0] && m->driver[0])
        doc_add(&c->report, DOC_OK, "libraries", "%s: vgpu (%s) in front of the driver (%s)", label, m->vgpu,
                m->driver);
    else if (m->vgpu[0] && c->proc && doc_proc_getenv(c->proc, "VGPU_REMOTE"))
        doc_add(&c->report, DOC_OK, "libraries", "%s: vgpu (%s) is loaded, with no driver: its GPU is remote", label,
                m->vgpu);
    else if (m->vgpu[0])
        doc_add(&c->report, DOC_OK, "libraries", "%s: vgpu (%s) is loaded, the driver not yet: vgpu loads it at the first call it forwards",
                label, m->vgpu);
    else if (m->driver[0])
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "libraries",
                        "%s: the driver (%s) is mapped and vgpu is not: this process uses the GPU without vGPU "
                        "limits", label, m->driver),
                "%s; or, where its parent starts it without LD_PRELOAD, %s", doc_rerun_hint(c, hint, sizeof(hint)),
                doc_system_install_hint(c, install, sizeof(install)));
    else if (!m->stub[0] && !m->other[0])
        doc_add(&c->report, DOC_INFO, "libraries", "%s: not loaded (the process has not used %s yet)", label,
                w == DOC_CUDA ? "CUDA" : "NVML");
    if (m->replaced)
        doc_add(&c->report, DOC_INFO, "libraries", "%s: a mapped file was replaced or removed since the process "
                "loaded it (an upgrade?); a restart loads the new one", label);
}

void doc_check_maps(struct doc_ctx *c)
{
    if (!c->proc)
        return;
    char path[64], *data;
    size_t len;
    snprintf(path, sizeof(path), "/proc/%d/maps", c->proc->pid);
    int e = doc_fs_read(&c->host, path, &data, &len);
    if (e) {
        doc_fix(doc_add(&c->report, DOC_WARNING, "libraries", "cannot read %s: %s", path, strerror(e)),
                "run vgpu-doctor as the process's user or as root: sudo vgpu-doctor %d", c->proc->pid);
        return;
    }
    c->maps_read = true;
    struct mapped *m = calloc(DOC_NLIBS, sizeof(*m));
    if (!m) {
        free(data);
        return;
    }
    /* "start-end perms offset dev inode   path": the path is the rest after five fields.
     * A library's segments are consecutive lines: each file is judged once. */
    char prev[PATH_MAX] = "";
    for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
        char *p = line;
        for (int field = 0; field < 5 && p; field++) {
            p += strspn(p, " ");
            p = strchr(p, ' ');
        }
        if (!p)
            continue;
        p += strspn(p, " ");
        if (*p == '/' && strcmp(p, prev) != 0) {
            snprintf(prev, sizeof(prev), "%s", p);
            note(c, m, p);
        }
    }
    free(data);
    for (int w = 0; w < DOC_NLIBS; w++)
        report(c, (enum doc_which)w, &m[w]);
    free(m);
}
