/* Whether this process is a guest of a remote GPU, and which (mode.c): what
 * the forwarder asks before it picks the remote driver's table. */
#pragma once

#include <stdbool.h>

/* Whether this process drives a remote GPU (VGPU_REMOTE is set). */
bool vgpu_remote_wanted(void);
/* The executor's socket, for messages. */
const char *vgpu_remote_where(void);
/* Whether the operator lets this process have the remote GPU it asks for:
 * on a machine whose operator requires a source, only the mediator's.  A
 * process it does not is given no remote driver; the backend refuses it,
 * saying why (docs/design/remote.md). */
bool vgpu_remote_allowed(void);
