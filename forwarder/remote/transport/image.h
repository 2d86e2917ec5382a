/* How long a module image is, by its own headers (docs/design/remote.md). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * The bytes a module image spans: a fatbin's header and the size it
 * declares; an ELF64 cubin's headers, program and section tables and every
 * section's data; PTX (any other text) to its NUL.  Only the first max
 * bytes at image are read, and 0 means the image says it is longer (or its
 * text has no NUL within them), or it is no image: a fatbin wrapper (its
 * words are pointers), text with control characters other than white
 * space.  The guest sends that many bytes; the executor checks that an
 * image it was sent spans no more than it holds, so the driver never
 * reads a word a guest chose as an address.
 */
size_t vgpu_remote_image_extent(const void *image, size_t max);

/* Whether the n bytes at image begin as a fatbin wrapper does (below). */
bool vgpu_remote_image_is_wrapper(const void *image, size_t n);

/*
 * The image a pointer given to the driver names: the fatbin inside the
 * wrapper nvcc makes for each object's device code (what
 * __cudaRegisterFatBinary and the runtime's library loads pass on, magic
 * 0x466243b1, version 1), or the pointer itself.  NULL for a wrapper of
 * another version (a relocatable link's, whose images the guest does not
 * carry).  Guest only: it reads the guest's memory.
 */
const void *vgpu_remote_image_unwrap(const void *image);
