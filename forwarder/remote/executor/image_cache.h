/*
 * The executor's cache of module images (docs/design/remote.md, "Images cross
 * once"): the images guests sent whole, in files named by the SHA-256 the
 * executor computed of each, in a directory of the executor's user alone,
 * so that a later guest (another process, another container or VM of the
 * same executor user) names an image by its hash instead of sending it.
 * A guest can only name an image by the hash of its bytes: it gets nothing
 * it could not have sent.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forwarder/remote/transport/sha256.h"

/* Opens the cache as the environment says (VGPU_REMOTE_IMAGE_CACHE: a
 * directory, or "off"; default /var/tmp/vgpu-images-UID), made 0700 where
 * missing; one another user owns, or others may write, is refused (said).
 * Whether the cache is on. */
bool vgpu_exec_cache_open(void);

/* The image of hash, read into memory with a NUL after it (*n its bytes),
 * or NULL when the cache has none. */
char *vgpu_exec_cache_get(const uint8_t hash[VGPU_SHA256_BYTES], size_t *n);

/* n bytes of image (one the driver loaded, to its extent) stored under the
 * hash computed here (a file written aside and renamed); the files used
 * least lately go past VGPU_REMOTE_IMAGE_CACHE_MIB (default 4096) in all. */
void vgpu_exec_cache_put(const void *image, size_t n);
