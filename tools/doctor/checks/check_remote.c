/*
 * A remote GPU (docs/guide/remote.md): a process with VGPU_REMOTE set has no GPU
 * of its own; an executor on the host makes its calls, in a vGPU.  Says
 * where its calls go and whether that socket is there, in the process's
 * own file system; a driver mapped beside vgpu in such a process is one it
 * does not need.
 */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"

#include "common/contract/protocol/mediator_client.h"

#include <string.h>
#include <sys/stat.h>

/* Whether path is a socket in fs. */
static bool socket_there(const struct doc_fs *fs, const char *path)
{
    char real[4096];
    struct stat st;
    return doc_fs_path(fs, path, real, sizeof(real)) && stat(real, &st) == 0 && S_ISSOCK(st.st_mode);
}

void doc_check_remote(struct doc_ctx *c)
{
    const char *where = c->proc ? doc_proc_getenv(c->proc, "VGPU_REMOTE") : NULL;
    if (!where || !*where)
        return;
    c->remote = true;
    if (strcmp(where, "mediator") == 0) {
        const char *sock = doc_proc_getenv(c->proc, "VGPU_MEDIATOR_SOCKET");
        const char *vgpu = doc_proc_getenv(c->proc, "VGPU_NAME");
        if (!sock || !*sock)
            sock = VGPU_MEDIATOR_DEFAULT_SOCKET;
        if (socket_there(&c->fs, sock))
            doc_add(&c->report, DOC_OK, "remote",
                    "a remote GPU: the mediator at %s starts an executor for the "
                    "process's calls, in vGPU %s (the process has no GPU of its own)",
                    sock, vgpu && *vgpu ? vgpu : "(the mediator's choice)");
        else
            doc_fix(doc_add(&c->report, DOC_PROBLEM, "remote",
                            "VGPU_REMOTE=mediator, but there is no mediator's "
                            "socket at %s in the process's file system: every CUDA call fails "
                            "(CUDA_ERROR_DEVICE_UNAVAILABLE)",
                            sock),
                    "mount the host's mediator socket at %s (a container: -v %s:%s), or set VGPU_MEDIATOR_SOCKET "
                    "to where it is",
                    sock, sock, sock);
    } else if (socket_there(&c->fs, where)) {
        doc_add(&c->report, DOC_OK, "remote",
                "a remote GPU: the process's CUDA calls go to the executor at %s "
                "(the process has no GPU of its own)",
                where);
    } else {
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "remote",
                        "VGPU_REMOTE=%s, which is no socket in the process's "
                        "file system: every CUDA call fails (CUDA_ERROR_DEVICE_UNAVAILABLE)",
                        where),
                "start an executor under vgpu on the host (vgpu-run --memory 8G -- vgpu-executor --listen %s) and "
                "mount its socket there, or ask the mediator for one: VGPU_REMOTE=mediator",
                where);
    }
    if (c->driver_mapped[DOC_CUDA])
        doc_add(&c->report, DOC_WARNING, "remote",
                "the process maps NVIDIA's libcuda as well, which a remote GPU "
                "does not use: it may reach the host's GPU around its vGPU if it has the device files");
}
