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

/* Owned by this file: the generations atomically, the rest under lock.
 * tuning counts the calls that change what tuning answers (a function's
 * attributes, a context's limits or cache configuration): the answers they
 * change are of generation + tuning, which grows at either's change. */
static uint64_t generation = 1, tuning;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Answers by key, each of the generation it was asked in, in a table
 * hashed by key: a key is looked for in PROBE entries from its hash; a key
 * answered again takes its old entry, else an empty or outdated one there,
 * else the first of them.  An entry of generation 0 is empty. */
#define KEY_WORDS 4
#define PROBE 8
/* An answer: the one value, or two (a primary context's flags and state). */
struct answer {
    uint64_t first, second;
};
struct memo {
    uint64_t gen;
    uint64_t key[KEY_WORDS];
    struct answer value;
};
struct memo_table {
    struct memo *e;
    unsigned size; /* a power of two */
};
#define MEMO_TABLE(name, entries)                  \
    static struct memo name##_entries[entries];    \
    static struct memo_table name = { name##_entries, entries }
MEMO_TABLE(current, 256);
MEMO_TABLE(device_of, 256);
MEMO_TABLE(primary, 64);
MEMO_TABLE(limits, 256);
MEMO_TABLE(context_ids, 256);
MEMO_TABLE(occupancy, 1024);
/* A program's kernels, each a function in each context, and each one's
 * few attributes: thousands of answers in a framework's process. */
MEMO_TABLE(functions, 4096);
MEMO_TABLE(function_attributes, 8192);
static struct {
    uint8_t known[MAX_ATTRIBUTES];
    int value[MAX_ATTRIBUTES];
} attributes[MAX_DEVICES];
static bool device_known[MAX_DEVICES];
static CUdevice device_handle[MAX_DEVICES];

/* A child of fork has an executor of its own, and may find the lock held. */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void child_after_fork(void)
{
    pthread_mutex_init(&lock, NULL);
    memset(attributes, 0, sizeof(attributes));
    memset(device_known, 0, sizeof(device_known));
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

void vgpu_remote_tuned(void)
{
    __atomic_add_fetch(&tuning, 1, __ATOMIC_RELEASE);
}

/* The generation of what tuning changes. */
static uint64_t now_tuned(void)
{
    return now() + __atomic_load_n(&tuning, __ATOMIC_ACQUIRE);
}

uint64_t vgpu_remote_generation(void)
{
    return now();
}

static unsigned hash_of(const struct memo_table *t, const uint64_t key[KEY_WORDS])
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < KEY_WORDS; i++)
        h = (h ^ key[i]) * 0xff51afd7ed558ccdull;
    return (unsigned)(h >> 32) & (t->size - 1);
}

static struct memo *memo_find(struct memo_table *t, const uint64_t key[KEY_WORDS])
{
    for (unsigned i = 0, h = hash_of(t, key); i < PROBE; i++) {
        struct memo *m = &t->e[(h + i) & (t->size - 1)];
        if (m->gen && memcmp(m->key, key, sizeof(m->key)) == 0)
            return m;
    }
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
    unsigned h = hash_of(t, key);
    struct memo *m = memo_find(t, key);
    for (unsigned i = 0; !m && i < PROBE; i++) {
        struct memo *free_one = &t->e[(h + i) & (t->size - 1)];
        if (free_one->gen != g)
            m = free_one;
    }
    if (!m)
        m = &t->e[h];
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
    uint64_t g = now_tuned();
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

/* The driver's version: the host's, for the process's life. */
CUresult vgpu_remote_guest_cuDriverGetVersion(int *version)
{
    static int known; /* atomic: 0 until asked */
    int v = __atomic_load_n(&known, __ATOMIC_ACQUIRE);
    if (version && v) {
        *version = v;
        return CUDA_SUCCESS;
    }
    CUresult r = vgpu_remote_carried_cuDriverGetVersion(version);
    if (r == CUDA_SUCCESS && version)
        __atomic_store_n(&known, *version, __ATOMIC_RELEASE);
    return r;
}

/* A limit of the current context: each changes only by cuCtxSetLimit (a
 * new generation), but the stack's size, which the driver grows for a
 * kernel that needs more and never shrinks: asked each time. */
CUresult vgpu_remote_guest_cuCtxGetLimit(size_t *value, CUlimit limit)
{
    CUcontext ctx = NULL;
    if (!value || limit == CU_LIMIT_STACK_SIZE || vgpu_remote_guest_cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
        return vgpu_remote_carried_cuCtxGetLimit(value, (uint32_t)limit);
    uint64_t g = now_tuned();
    const uint64_t *key = KEY((uint64_t)(uintptr_t)ctx, (uint64_t)limit);
    struct answer v;
    if (memo_get(&limits, g, key, &v)) {
        *value = (size_t)v.first;
        return CUDA_SUCCESS;
    }
    CUresult r = vgpu_remote_carried_cuCtxGetLimit(value, (uint32_t)limit);
    if (r == CUDA_SUCCESS)
        memo_put(&limits, g, key, (struct answer){ *value, 0 });
    return r;
}

/* A function's or kernel's attribute: each changes only by
 * cuFuncSetAttribute or cuKernelSetAttribute (what tuning answers changes),
 * and goes with its module or library's unloading (a new generation).  A
 * set of the value the attribute is known to have changes nothing: it is
 * answered here (frameworks set a kernel's shared memory before each of
 * its launches). */
#define ATTRIBUTE_KEY(attr, f, dev, kernel) \
    KEY((uint64_t)(uintptr_t)(f), (uint64_t)(uint32_t)(attr), (uint64_t)(uint32_t)(dev), (kernel))

static CUresult attribute(int *value, CUfunction_attribute attr, const void *f, CUdevice dev, bool kernel)
{
    uint64_t g = now_tuned();
    const uint64_t *key = ATTRIBUTE_KEY(attr, f, dev, kernel);
    struct answer v;
    if (value && memo_get(&function_attributes, g, key, &v)) {
        *value = (int)v.first;
        return CUDA_SUCCESS;
    }
    CUresult r = kernel ? vgpu_remote_carried_cuKernelGetAttribute(value, (uint32_t)attr, (void *)f, (uint32_t)dev)
                        : vgpu_remote_carried_cuFuncGetAttribute(value, (uint32_t)attr, (void *)f);
    if (r == CUDA_SUCCESS && value)
        memo_put(&function_attributes, g, key, (struct answer){ (uint64_t)(uint32_t)*value, 0 });
    return r;
}

/* The attributes a program may set (the rest the driver refuses to set). */
static bool settable(CUfunction_attribute attr)
{
    switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: return true;
    default: return false;
    }
}

static CUresult set_attribute(CUfunction_attribute attr, int value, const void *f, CUdevice dev, bool kernel)
{
    const uint64_t *key = ATTRIBUTE_KEY(attr, f, dev, kernel);
    struct answer v;
    uint64_t before = now_tuned();
    if (settable(attr) && memo_get(&function_attributes, before, key, &v) && (int)v.first == value)
        return CUDA_SUCCESS;
    CUresult r = kernel ? vgpu_remote_carried_cuKernelSetAttribute((uint32_t)attr, (uint32_t)value, (void *)f,
                                                                   (uint32_t)dev)
                        : vgpu_remote_carried_cuFuncSetAttribute((void *)f, (uint32_t)attr, (uint32_t)value);
    /* What the set left, kept unless another change came between (the
     * carried call's own tuning is the one): a set of another thread's
     * may have reached the driver after it. */
    uint64_t after = now_tuned();
    if (r == CUDA_SUCCESS && after == before + 1)
        memo_put(&function_attributes, after, key, (struct answer){ (uint64_t)(uint32_t)value, 0 });
    return r;
}

CUresult vgpu_remote_guest_cuFuncGetAttribute(int *value, CUfunction_attribute attr, CUfunction f)
{
    return attribute(value, attr, f, 0, false);
}

CUresult vgpu_remote_guest_cuKernelGetAttribute(int *value, CUfunction_attribute attr, CUkernel kernel, CUdevice dev)
{
    return attribute(value, attr, kernel, dev, true);
}

CUresult vgpu_remote_guest_cuFuncSetAttribute(CUfunction f, CUfunction_attribute attr, int value)
{
    return set_attribute(attr, value, f, 0, false);
}

CUresult vgpu_remote_guest_cuKernelSetAttribute(CUfunction_attribute attr, int value, CUkernel kernel, CUdevice dev)
{
    return set_attribute(attr, value, kernel, dev, true);
}

/* A context's id: its own for its life (NULL: the thread's current one's). */
CUresult vgpu_remote_guest_cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
    CUcontext c = ctx;
    if (!id || (!c && (vgpu_remote_guest_cuCtxGetCurrent(&c) != CUDA_SUCCESS || !c)))
        return vgpu_remote_carried_cuCtxGetId(ctx, id);
    uint64_t g = now();
    const uint64_t *key = KEY((uint64_t)(uintptr_t)c);
    struct answer v;
    if (memo_get(&context_ids, g, key, &v)) {
        *id = v.first;
        return CUDA_SUCCESS;
    }
    CUresult r = vgpu_remote_carried_cuCtxGetId(c, id);
    if (r == CUDA_SUCCESS)
        memo_put(&context_ids, g, key, (struct answer){ *id, 0 });
    return r;
}

/* A device by its ordinal: the executor's devices, for the process's life. */
CUresult vgpu_remote_guest_cuDeviceGet(CUdevice *dev, int ordinal)
{
    if (!dev || ordinal < 0 || ordinal >= MAX_DEVICES)
        return vgpu_remote_carried_cuDeviceGet(dev, (uint32_t)ordinal);
    now();
    pthread_mutex_lock(&lock);
    bool hit = device_known[ordinal];
    if (hit)
        *dev = device_handle[ordinal];
    pthread_mutex_unlock(&lock);
    if (hit)
        return CUDA_SUCCESS;
    CUresult r = vgpu_remote_carried_cuDeviceGet(dev, (uint32_t)ordinal);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        device_handle[ordinal] = *dev;
        device_known[ordinal] = true;
        pthread_mutex_unlock(&lock);
    }
    return r;
}
