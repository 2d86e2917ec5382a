/* libvgpu-nvml's side of the peer table; see peer.h. */
#define _GNU_SOURCE
#include "vgpu_backend/join/peer/peer.h"

#include "common/identity.h"
#include "common/log.h"
#include "forwarder/elfcheck.h"
#include "forwarder/pathfinder.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef VGPU_VERSION
#error "build with -DVGPU_VERSION=\"...\" (meson does)"
#endif

/* Found once by find(), read-only afterwards; NULL: this library joins itself. */
static const struct vgpu_peer_table *peer;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const struct vgpu_peer_table *table_of(void *h)
{
    CUresult (*get)(const void **, const CUuuid *) = (__typeof__(get))dlsym(h, "cuGetExportTable");
    static const CUuuid id = VGPU_PEER_TABLE_ID;
    const void *t = NULL;
    if (!get || get(&t, &id) != CUDA_SUCCESS || !t)
        return NULL;
    const struct vgpu_peer_table *p = t;
    if (p->size < sizeof(*p) || strcmp(p->version, VGPU_VERSION) != 0 || p->self_size != sizeof(struct vgpu_self)) {
        vgpu_warn("libvgpu-cuda in this process is vgpu %.31s, this libvgpu-nvml is %s: install both from one "
                  "build; NVML joins the vGPU on its own",
                  p->version, VGPU_VERSION);
        return NULL;
    }
    return p->join ? p : NULL; /* never a NULL to call */
}

/* libvgpu-cuda beside this library, as the symlink install or LD_PRELOAD
 * lays them out: loaded (only) by absolute path once it is known to be vgpu. */
static void *sibling(void)
{
    const char *self_path = vgpu_object_path_of((const void *)vgpu_peer_self);
    const char *slash = self_path ? strrchr(self_path, '/') : NULL;
    if (!slash)
        return NULL;
    static const char *const names[] = { "libcuda.so.1", "libvgpu-cuda.so" };
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - self_path), self_path, names[i]);
        if (access(path, F_OK) == 0 && vgpu_elf_is_vgpu(path)) {
            void *h = vgpu_real_dlopen()(path, RTLD_NOW | RTLD_LOCAL);
            if (h)
                return h;
        }
    }
    return NULL;
}

static void find(void)
{
    void *h = vgpu_real_dlopen()("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h && !vgpu_handle_is_vgpu(h))
        h = NULL; /* the real driver: no vgpu backend there */
    if (!h)
        h = sibling();
    peer = h ? table_of(h) : NULL;
    vgpu_debug("NVML %s", peer ? "uses libvgpu-cuda's vGPU backend" : "joins the vGPU on its own");
}

const struct vgpu_self *vgpu_peer_self(void)
{
    pthread_once(&once, find);
    return peer ? peer->join(false) : vgpu_self_join(false);
}
