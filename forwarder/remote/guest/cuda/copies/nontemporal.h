/*
 * A copy around the CPU's caches (nontemporal.c): the pieces staged
 * copies give the program.
 */
#pragma once

#include <stddef.h>

/* dst = src, n bytes; stored around the CPU's caches where n is large. */
void vgpu_remote_copy_nontemporal(void *dst, const void *src, size_t n);
