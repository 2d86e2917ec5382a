/* Whether this process drives a remote GPU (mode.h). */
#include "forwarder/remote/guest/mode.h"

#include "common/operator.h"

#include <stdlib.h>
#include <string.h>

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

bool vgpu_remote_allowed(void)
{
    const struct vgpu_operator *op = vgpu_operator();
    return !op->refused && (op->require == VGPU_REQUIRE_NONE || strcmp(vgpu_remote_where(), "mediator") == 0);
}
