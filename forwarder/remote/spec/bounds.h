/*
 * Bounds of what crosses that are no field's of a message (a field's bound
 * is its declaration's, VGPU_IN_/VGPU_OUT_NAME_FIELD_MAX in the generated
 * header): the guest keeps within them, the executor checks them.
 */
#pragma once

/* Each JIT log of a load or a link, at most: its size option is cut to it. */
#define VGPU_REMOTE_JIT_LOG (64u << 10)
/* The JIT options of a load or a link, at most (each message's numOptions
 * is declared <= it). */
#define VGPU_REMOTE_JIT_OPTIONS 32
