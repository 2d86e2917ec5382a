/*
 * SHA-256 (FIPS 180-4), by which module images are named to the
 * executor's cache (docs/design/remote.md, "Images cross once"): a guest names an
 * image by the hash of its bytes, and the executor stores only what it
 * hashed itself.  The x86 SHA extensions where the CPU has them.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define VGPU_SHA256_BYTES 32

void vgpu_sha256(const void *data, size_t n, uint8_t out[VGPU_SHA256_BYTES]);

/* The same by the portable code alone (the tests compare the two). */
void vgpu_sha256_portable(const void *data, size_t n, uint8_t out[VGPU_SHA256_BYTES]);
