/* libvgpu-cuda's side of the peer table; see peer.h. */
#include "vgpu_backend/join/peer/peer.h"

#include <string.h>

#ifndef VGPU_VERSION
#error "build with -DVGPU_VERSION=\"...\" (meson does)"
#endif

static const CUuuid table_id = VGPU_PEER_TABLE_ID;
static const struct vgpu_peer_table table = {
    .size = sizeof(struct vgpu_peer_table),
    .version = VGPU_VERSION,
    .self_size = sizeof(struct vgpu_self),
    .join = vgpu_self_join,
};

const struct vgpu_peer_table *vgpu_peer_table_for(const CUuuid *id)
{
    return id && memcmp(id, &table_id, sizeof(table_id)) == 0 ? &table : NULL;
}
