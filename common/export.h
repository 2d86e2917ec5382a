/*
 * Marks a driver entry point that vgpu defines in C (a hook).  Everything
 * else is built hidden; the generated version script then decides which of
 * the default-visibility names are global: exactly the driver's.
 */
#pragma once

#define VGPU_EXPORT __attribute__((visibility("default")))
