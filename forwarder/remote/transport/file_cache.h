/*
 * A folder of files named by the SHA-256 of what they hold, the user's
 * alone: the executor's module images (executor/image_cache.c) and a
 * guest's NVRTC compiles (guest/cuda/private/compile_cache.c).  A file is
 * written aside (".PID.TID.NAME") and renamed into place, so a reader sees
 * a whole file or none; past a bound, the files used least lately go.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "forwarder/remote/transport/sha256.h"

/* A file's name: the hash in hex, and its NUL. */
#define VGPU_FILE_CACHE_NAME (2 * VGPU_SHA256_BYTES + 1)

/* The folder at path, opened, where it is one of this user's that none but
 * it may write and not a link; else -1, and *why says which of those it is
 * not (NULL where the open failed otherwise: errno). */
int vgpu_file_cache_open(const char *path, const char **why);

void vgpu_file_cache_name(const uint8_t hash[VGPU_SHA256_BYTES], char name[VGPU_FILE_CACHE_NAME]);

/* Reads exactly n bytes of fd.  Whether it did. */
bool vgpu_file_cache_read(int fd, void *p, size_t n);

/* The iovecs' bytes as the file name in folder dir (0600): written aside,
 * then renamed.  Whether it was; errno where not. */
bool vgpu_file_cache_write(int dir, const char *name, const struct iovec *iov, int n);

/* Once the files of folder dir hold more than most bytes, removes the
 * least lately modified until they hold at most keep; and files written
 * aside more than stale_seconds ago (a writer that died). */
void vgpu_file_cache_trim(int dir, uint64_t most, uint64_t keep, unsigned stale_seconds);
