/*
 * What the guest keeps of the executor's answers (cache.h).
 *
 * The current context, and so its device, is each thread's: an executor
 * thread serves each guest thread's lane (docs/design/remote.md), so those
 * answers are kept per thread (by a number each thread takes at its first
 * ask); the rest serve every thread.  Each
 * kept answer carries the generation it was asked in; a change (a context
 * made current, pushed, popped, created or destroyed, a primary context
 * retained, released, reset or given flags, a module or library unloaded)
 * starts a new generation, and an answer asked while one happened is kept
 * under the old one, never used.  Devices' attributes do not change and
 * are kept for the process's life.  Only successes are kept.
 */
#include "forwarder/remote/guest/cuda/cache.h"

#include "vgpu_remote_cuda_guest.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEVICES 16
#define MAX_ATTRIBUTES 256

/* Owned by this file: the generation atomically, the rest under lock. */
static uint64_t generation = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Answers by key, each of the generation it was asked in; a key answered
 * again takes its old entry, and a full table gives up its entries in turn.
 * Lookups read the used entries only (current's is one). */
#define KEY_WORDS 4
/* An answer: the one value, or two (a primary context's flags and state). */
struct answer {
    uint64_t first, second;
};
struct memo {
    uint64_t gen;
    uint64_t key[KEY_WORDS];
    struct answer value;
};
#define MEMO_ENTRIES 256
struct memo_table {
    struct memo e[MEMO_ENTRIES];
    unsigned used, next;
};
static struct memo_table current, device_of, primary, functions, occupancy;
static struct {
    uint8_t known[MAX_ATTRIBUTES];
    int value[MAX_ATTRIBUTES];
} attributes[MAX_DEVICES];

/* A child of fork has an executor of its own, and may find the lock held. */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void child_after_fork(void)
{
    pthread_mutex_init(&lock, NULL);
    memset(attributes, 0, sizeof(attributes));
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

static uint64_t now(void)
{
    pthread_once(&once, register_atfork);
    return __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
}

void vgpu_remote_context_changed(void)
{
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
}

uint64_t vgpu_remote_generation(void)
{
    return now();
}

static struct memo *memo_find(struct memo_table *t, const uint64_t key[KEY_WORDS])
{
    for (unsigned i = 0; i < t->used; i++)
        if (memcmp(t->e[i].key, key, sizeof(t->e[i].key)) == 0)
            return &t->e[i];
    return NULL;
}

static bool memo_get(struct memo_table *t, uint64_t g, const uint64_t key[KEY_WORDS], struct answer *value)
{
    pthread_mutex_lock(&lock);
    const struct memo *m = memo_find(t, key);
    bool hit = m && m->gen == g;
    if (hit)
        *value = m->value;
    pthread_mutex_unlock(&lock);
    return hit;
}

static void memo_put(struct memo_table *t, uint64_t g, const uint64_t key[KEY_WORDS], struct answer value)
{
    pthread_mutex_lock(&lock);
    struct memo *m = memo_find(t, key);
    if (!m)
        m = t->used < MEMO_ENTRIES ? &t->e[t->used++] : &t->e[t->next++ % MEMO_ENTRIES];
    m->gen = g;
    memcpy(m->key, key, sizeof(m->key));
    m->value = value;
    pthread_mutex_unlock(&lock);
}

#define KEY(...) ((const uint64_t[KEY_WORDS]){ __VA_ARGS__ })

/* The calling thread's number, the key of its own answers: unique for the
 * process's life (an exited thread's never comes back for another). */
static uint64_t this_thread(void)
{
    static uint64_t threads; /* atomic: numbers given */
    static __thread uint64_t me;
    if (!me)
        me = __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);
    return me;
}

CUresult vgpu_remote_guest_cuCtxGetCurrent(CUcontext *ctx)
{
    uint64_t g = now(), t = this_thread();
    struct answer v;
    if (ctx && memo_get(&current, g, KEY(t), &v)) {
        *ctx = (CUcontext)(uintptr_t)v.first;
        return CUDA_SUCCESS;
    }
    CUresult r = vgpu_remote_carried_cuCtxGetCurrent(ctx);
    if (r == CUDA_SUCCESS && ctx)
        memo_put(&current, g, KEY(t), (struct answer){ (uint64_t)(uintptr_t)*ctx, 0 });
    return r;
}

/* ctx's device (NULL: the calling thread's current context's); v2 says
 * which call asks it. */
static CUresult device(CUdevice *dev, CUcontext ctx, bool v2)
{
    uint64_t g = now(), k = (uint64_t)(uintptr_t)ctx, t = ctx ? 0 : this_thread();
    struct answer v;
    if (dev && memo_get(&device_of, g, KEY(k, v2, t), &v)) {
        *dev = (CUdevice)v.first;
        return CUDA_SUCCESS;
    }
    CUresult r = v2 ? vgpu_remote_carried_cuCtxGetDevice_v2(dev, ctx) : vgpu_remote_carried_cuCtxGetDevice(dev);
    if (r == CUDA_SUCCESS && dev)
        memo_put(&device_of, g, KEY(k, v2, t), (struct answer){ (uint64_t)(uint32_t)*dev, 0 });
    return r;
}

CUresult vgpu_remote_guest_cuCtxGetDevice(CUdevice *dev)
{
    return device(dev, NULL, false);
}

CUresult vgpu_remote_guest_cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
    return device(dev, ctx, true);
}

CUresult vgpu_remote_guest_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    uint64_t g = now();
    struct answer v;
    if (flags && active && memo_get(&primary, g, KEY((uint64_t)(uint32_t)dev), &v)) {
        *flags = (unsigned)v.first;
        *active = (int)v.second;
        return CUDA_SUCCESS;
    }
    CUresult r = vgpu_remote_carried_cuDevicePrimaryCtxGetState((uint32_t)dev, flags, active);
    if (r == CUDA_SUCCESS && flags && active)
        memo_put(&primary, g, KEY((uint64_t)(uint32_t)dev), (struct answer){ *flags, (uint64_t)(uint32_t)*active });
    return r;
}

CUresult vgpu_remote_guest_cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev)
{
    if (!value || dev < 0 || dev >= MAX_DEVICES || (unsigned)attr >= MAX_ATTRIBUTES)
        return vgpu_remote_carried_cuDeviceGetAttribute(value, (uint32_t)attr, (uint32_t)dev);
    now();
    pthread_mutex_lock(&lock);
    bool hit = attributes[dev].known[attr];
    if (hit)
        *value = attributes[dev].value[attr];
    pthread_mutex_unlock(&lock);
    if (hit)
        return CUDA_SUCCESS;
    CUresult r = vgpu_remote_carried_cuDeviceGetAttribute(value, (uint32_t)attr, (uint32_t)dev);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        attributes[dev].value[attr] = *value;
        attributes[dev].known[attr] = 1;
        pthread_mutex_unlock(&lock);
    }
    return r;
}

/* A kernel's function in the current context. */
CUresult vgpu_remote_guest_cuKernelGetFunction(CUfunction *f, CUkernel kernel)
{
    CUcontext ctx = NULL;
    if (!f || vgpu_remote_guest_cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
        return vgpu_remote_carried_cuKernelGetFunction(f, kernel);
    uint64_t g = now(), k = (uint64_t)(uintptr_t)kernel, c = (uint64_t)(uintptr_t)ctx;
    struct answer v;
    if (memo_get(&functions, g, KEY(k, c), &v)) {
        *f = (CUfunction)(uintptr_t)v.first;
        return CUDA_SUCCESS;
    }
    CUresult r = vgpu_remote_carried_cuKernelGetFunction(f, kernel);
    if (r == CUDA_SUCCESS)
        memo_put(&functions, g, KEY(k, c), (struct answer){ (uint64_t)(uintptr_t)*f, 0 });
    return r;
}

static CUresult ask_blocks(int *out, CUfunction f, int block_size, size_t smem, unsigned flags, bool with_flags)
{
    return with_flags
               ? vgpu_remote_carried_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(out, f, (uint32_t)block_size,
                                                                                          smem, flags)
               : vgpu_remote_carried_cuOccupancyMaxActiveBlocksPerMultiprocessor(out, f, (uint32_t)block_size, smem);
}

static CUresult blocks(int *out, CUfunction f, int block_size, size_t smem, unsigned flags, bool with_flags)
{
    uint64_t g = now();
    struct answer v;
    const uint64_t *key =
        KEY((uint64_t)(uintptr_t)f, (uint64_t)(uint32_t)block_size, smem, (uint64_t)flags | (uint64_t)with_flags << 32);
    if (out && memo_get(&occupancy, g, key, &v)) {
        *out = (int)v.first;
        return CUDA_SUCCESS;
    }
    CUresult r = ask_blocks(out, f, block_size, smem, flags, with_flags);
    if (r == CUDA_SUCCESS && out)
        memo_put(&occupancy, g, key, (struct answer){ (uint64_t)(uint32_t)*out, 0 });
    return r;
}

CUresult vgpu_remote_guest_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *out, CUfunction f, int block_size,
                                                                         size_t smem)
{
    return blocks(out, f, block_size, smem, 0, false);
}

CUresult vgpu_remote_guest_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *out, CUfunction f,
                                                                                  int block_size, size_t smem,
                                                                                  unsigned int flags)
{
    return blocks(out, f, block_size, smem, flags, true);
}
