/*
 * Two processes start on a new standalone window at once.  The first opens
 * the empty file and is about to lock it; the second locks it first, sizes
 * and initialises the window, and enters (its slot counts).  When the first
 * gets the lock, the window is no longer new: it must join it, not
 * initialise it again over the second's slot and counters, or the vGPU
 * forgets a live process and what it holds, and its processes together can
 * hold more than its quota.
 *
 * Deterministic: flock is wrapped (-Wl,--wrap=flock), so the first attach
 * (a thread here) stops at its lock until the second has entered.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/contract/window/bar0.h"

#define MiB (1ull << 20)

int __real_flock(int fd, int op);
int __wrap_flock(int fd, int op);

/* Set by main: the next thread to lock stops before it, until released. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static pthread_t stopped_thread;
static bool stop_armed, stopped, released;

int __wrap_flock(int fd, int op)
{
    pthread_mutex_lock(&gate_lock);
    if (stop_armed && (op & LOCK_EX) && pthread_equal(pthread_self(), stopped_thread)) {
        stop_armed = false;
        stopped = true;
        pthread_cond_broadcast(&gate_cond);
        while (!released)
            pthread_cond_wait(&gate_cond, &gate_lock);
    }
    pthread_mutex_unlock(&gate_lock);
    return __real_flock(fd, op);
}

static char path[256];
static struct vgpu_bar0_config config;

struct attach {
    struct vgpu_bar0_map map;
    int rc;
    char err[512];
};

static void *first_attach(void *arg)
{
    struct attach *a = arg;
    a->rc = vgpu_bar0_attach(path, &config, true, &a->map, a->err, sizeof(a->err));
    return NULL;
}

int main(void)
{
    char dir[] = "/tmp/vgpu-attach-race.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/vgpu.bar0", dir);
    config.device_count = 1;
    strcpy(config.device[0].physical, "0");
    config.device[0].compute_share = 100;
    atomic_store(&config.device[0].memory_limit, 1024 * MiB);

    /* The first process: opens the new file, then stops at its lock. */
    struct attach first = { .rc = -1 };
    pthread_t t;
    pthread_mutex_lock(&gate_lock);
    stop_armed = true;
    if (pthread_create(&t, NULL, first_attach, &first) != 0) {
        perror("pthread_create");
        return 1;
    }
    stopped_thread = t;
    while (!stopped)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);

    /* The second: attaches, initialises, enters, holds 100 MiB. */
    struct attach second;
    char err[512];
    if (vgpu_bar0_attach(path, &config, true, &second.map, err, sizeof(err)) != 0 ||
        vgpu_bar0_enter(&second.map, err, sizeof(err)) != 0) {
        fprintf(stderr, "FAIL: the second process could not join: %s\n", err);
        return 1;
    }
    vgpu_bar0_take(&second.map, 0, 100 * MiB, 1024 * MiB);

    /* The first gets its lock now. */
    pthread_mutex_lock(&gate_lock);
    released = true;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    pthread_join(t, NULL);
    if (first.rc != 0) {
        fprintf(stderr, "FAIL: the first process could not join: %s\n", first.err);
        return 1;
    }

    struct vgpu_bar0 *b = second.map.bar;
    uint64_t owner = atomic_load(&b->procs[second.map.slot].owner);
    uint64_t used = atomic_load(&b->status.device[0].memory_used);
    uint32_t processes = atomic_load(&b->status.processes);
    printf("after the first process joined: the second's slot %s, memory_used %llu MiB, %u process(es)\n",
           owner == second.map.owner ? "is live" : "is gone", (unsigned long long)(used / MiB), processes);
    int failed = 0;
    if (owner != second.map.owner || used != 100 * MiB || processes != 1) {
        fprintf(stderr, "FAIL: want the second's slot live, memory_used 100 MiB and 1 process: the first process "
                "initialised a window that was no longer new\n");
        failed = 1;
    }
    vgpu_bar0_close(&first.map);
    vgpu_bar0_close(&second.map);
    unlink(path);
    rmdir(dir);
    if (!failed)
        printf("ok - a window initialised while this process waited for its lock is joined, not made again\n");
    return failed;
}
