/*
 * Bounds of what crosses that are no field's of a message (a field's bound
 * is its declaration's, VGPU_IN_/VGPU_OUT_NAME_FIELD_MAX in the generated
 * header): the guest keeps within them, the executor checks them.
 */
#pragma once

/* Each of cuModuleLoadDataEx's JIT logs, at most: its size option is cut to it. */
#define VGPU_REMOTE_JIT_LOG (64u << 10)
