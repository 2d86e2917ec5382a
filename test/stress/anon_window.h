/*
 * What the in-process BAR0 stress tests (bar0_threads_test.c,
 * bar0_rebuild_race_test.c) share: a window of one device, share 100%, in
 * anonymous shared memory, so that no file or other process is involved.
 */
#pragma once

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "common/contract/window/bar0.h"

/* The window, initialised; NULL (said on stderr) when it cannot be mapped. */
static inline struct vgpu_bar0 *anon_window(void)
{
    struct vgpu_bar0 *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) {
        perror("mmap");
        return NULL;
    }
    struct vgpu_bar0_config config;
    memset(&config, 0, sizeof(config));
    config.device_count = 1;
    strcpy(config.device[0].physical, "0");
    config.device[0].compute_share = 100;
    vgpu_bar0_init(b, &config, 0, "");
    return b;
}
