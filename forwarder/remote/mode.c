/* Whether this process drives a remote GPU (forwarder/remote/client.h). */
#include "forwarder/remote/client.h"

#include <stdlib.h>

bool vgpu_remote_wanted(void)
{
    const char *s = getenv("VGPU_REMOTE");
    return s && *s;
}

const char *vgpu_remote_where(void)
{
    const char *s = getenv("VGPU_REMOTE");
    return s ? s : "";
}
