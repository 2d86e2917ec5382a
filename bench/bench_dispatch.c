/*
 * bench_dispatch: what calling the CUDA driver through vgpu costs, per call,
 * against calling the same driver directly, in one process.
 *
 *   bench_dispatch --driver PATH --vgpu PATH [--iters N] [--rounds R] [--json FILE]
 *
 * Both libraries are dlopen()ed by absolute path into this process and
 * resolved into two function tables, "direct" and "vgpu".  vgpu is pointed at
 * the same file through VGPU_REAL_LIBCUDA, so the loader hands it the very
 * driver instance (one handle, one context) that the direct table uses; each
 * case therefore differs between the two sides only by vgpu's own code.
 *
 * The cases (see `cases` below) cover the three kinds of path vgpu has: an
 * unhooked trampoline, a hooked C function whose backend passes through, and
 * a hook handed out by cuGetProcAddress, the way the CUDA runtime and the
 * frameworks reach the driver.  The two sides take turns every millisecond
 * or so within each of several rounds, so drift (clock boost, another
 * process) hits both alike; the medians over the rounds are reported.
 *
 * The figures are information only: the exit status says whether the
 * benchmark ran (0) or failed (1: a call failed; 2: bad usage), never
 * whether a target was met, because timings on shared CI hosts are noise.
 */
#define _GNU_SOURCE

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- tunables ---- */

enum {
    DEFAULT_ROUNDS = 5,
    MAX_ROUNDS = 101,
    /* Launches between two synchronisations: a real GPU queues launches
     * asynchronously, and without a bound the queue fills and the launch
     * loop ends up timing the GPU, not the call. */
    LAUNCH_BATCH = 1000,
    /* Turns each side takes per round (see measure). */
    CHUNKS = 50,
};

/* Each side's share of a round should last about this long: long enough
 * that clock reads and a stray interrupt are lost in it, short enough that
 * the whole run (cases x sides x rounds) takes a few seconds. */
static const double MEASURE_NS = 50e6;
/* Calibration doubles the call count until one loop takes this long. */
static const double CALIBRATE_NS = 5e6;
static const long MAX_ITERS = 1L << 32;

/* The size the alloc+free target is stated for: a typical small buffer, and
 * one at a time, so never a risk to the device's memory. */
static const size_t ALLOC_BYTES = 1u << 20;

/* ---- the driver API, typed from cuda.h ---- */

/* __typeof__ of the cuda.h prototypes rather than hand-written types, so a
 * header change that alters an ABI breaks the build instead of the stack.
 * cuda.h may #define some names to versioned twins (cuMemAlloc ->
 * cuMemAlloc_v2, cuLaunchKernel -> cuLaunchKernel_ptsz with per-thread
 * streams); the twins have the same prototype, and the symbols are looked
 * up by the explicit string names below, never through those macros. */
typedef __typeof__(&cuInit) init_fn;
typedef __typeof__(&cuDriverGetVersion) driver_get_version_fn;
typedef __typeof__(&cuDeviceGet) device_get_fn;
typedef __typeof__(&cuDeviceGetCount) device_get_count_fn;
typedef __typeof__(&cuDevicePrimaryCtxRetain) primary_ctx_retain_fn;
typedef __typeof__(&cuCtxSetCurrent) ctx_set_current_fn;
typedef __typeof__(&cuCtxSynchronize) ctx_synchronize_fn;
typedef __typeof__(&cuMemAlloc_v2) mem_alloc_fn;
typedef __typeof__(&cuMemFree_v2) mem_free_fn;
typedef __typeof__(&cuModuleLoadData) module_load_data_fn;
typedef __typeof__(&cuModuleGetFunction) module_get_function_fn;
typedef __typeof__(&cuGetProcAddress_v2) get_proc_address_fn;
typedef __typeof__(&cuLaunchKernel) launch_kernel_fn;
typedef __typeof__(&cuGetErrorName) get_error_name_fn;

/* One side of the comparison: a library and the entry points taken from it. */
struct side {
    const char *name; /* "direct" or "vgpu", for messages */
    const char *path; /* absolute */
    void *handle;

    init_fn init;
    driver_get_version_fn driver_get_version;
    device_get_fn device_get;
    device_get_count_fn device_get_count;
    primary_ctx_retain_fn primary_ctx_retain;
    ctx_set_current_fn ctx_set_current;
    ctx_synchronize_fn ctx_synchronize;
    mem_alloc_fn mem_alloc;
    mem_free_fn mem_free;
    module_load_data_fn module_load_data;
    module_get_function_fn module_get_function;
    get_proc_address_fn get_proc_address;
    get_error_name_fn get_error_name; /* optional: only for messages */

    /* From this side's cuGetProcAddress_v2, not dlsym: the launch case
     * measures what the CUDA runtime would be handed. */
    launch_kernel_fn launch;
};

/* The kernel the launch case runs, and its arguments. */
struct kernel {
    CUfunction fn;
    void **params;          /* NULL for the empty PTX kernel */
    const char *what;       /* for the report */
    CUdeviceptr buffer;     /* add_one's x; 0 when unused */
    int count;              /* add_one's n: 0, so the fake driver does no work */
    void *param_slots[2];   /* &buffer, &count */
};

static struct side direct = { .name = "direct" };
static struct side vgpu = { .name = "vgpu" };
static struct kernel kernel;

/* Results land here so the compiler must assume they are used. */
static volatile int sink_int;
static volatile CUdeviceptr sink_ptr;

/* ---- errors ---- */

static const char *progname = "bench_dispatch";

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s: ", progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

__attribute__((format(printf, 1, 2))) static void warn(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s: warning: ", progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* "CUDA_ERROR_INVALID_VALUE (1)", or just the number where the driver (a
 * fake one) has no cuGetErrorName.  Asks the direct table so that a broken
 * vgpu cannot garble its own error report.  Returned by value, so that two
 * of them can go into one message. */
struct cu_error_text {
    char s[96];
};

static struct cu_error_text cu_error(CUresult r)
{
    struct cu_error_text t;
    const char *name = NULL;
    if (!direct.get_error_name || direct.get_error_name(r, &name) != CUDA_SUCCESS || !name)
        name = "CUresult";
    snprintf(t.s, sizeof(t.s), "%s (%d)", name, (int)r);
    return t;
}

/* Out of line and cold: keeps the error path out of the timed loops, which
 * then differ between the sides only in the function they call. */
__attribute__((noreturn, cold, noinline)) static void call_failed(const struct side *s, const char *call, CUresult r)
{
    struct cu_error_text e = cu_error(r);
    die("%s %s failed: %s", s->name, call, e.s);
}

static void check(const struct side *s, const char *call, CUresult r)
{
    if (r != CUDA_SUCCESS)
        call_failed(s, call, r);
}

/* ---- loading ---- */

static void *need_sym(const struct side *s, const char *name)
{
    dlerror();
    void *p = dlsym(s->handle, name);
    if (!p)
        die("%s (%s) does not export %s: %s", s->name, s->path, name, dlerror());
    return p;
}

/* POSIX's blessed way of storing dlsym's void * in a function pointer. */
#define NEED(s, field, sym) (*(void **)&(s)->field = need_sym((s), sym))

static void load_side(struct side *s, const char *path)
{
    s->path = path;
    /* RTLD_LOCAL: vgpu exports every driver name (and dlopen), and neither
     * library may become the global definition of those for the other or for
     * this program.  RTLD_NOW: resolve everything before timing starts. */
    s->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!s->handle)
        die("cannot load the %s library: %s", s->name, dlerror());

    NEED(s, init, "cuInit");
    NEED(s, driver_get_version, "cuDriverGetVersion");
    NEED(s, device_get, "cuDeviceGet");
    NEED(s, device_get_count, "cuDeviceGetCount");
    NEED(s, primary_ctx_retain, "cuDevicePrimaryCtxRetain");
    NEED(s, ctx_set_current, "cuCtxSetCurrent");
    NEED(s, ctx_synchronize, "cuCtxSynchronize");
    NEED(s, mem_alloc, "cuMemAlloc_v2");
    NEED(s, mem_free, "cuMemFree_v2");
    NEED(s, module_load_data, "cuModuleLoadData");
    NEED(s, module_get_function, "cuModuleGetFunction");
    NEED(s, get_proc_address, "cuGetProcAddress_v2");
    *(void **)&s->get_error_name = dlsym(s->handle, "cuGetErrorName");
}

/* "libvgpu-cuda.so:cuLaunchKernel": where a function pointer lives, so the
 * report shows that the vgpu side really runs vgpu's hook. */
static const char *describe_fn(const void *fn, char *buf, size_t len)
{
    Dl_info info;
    if (!dladdr(fn, &info) || !info.dli_fname) {
        snprintf(buf, len, "%p (not in a loaded library)", fn);
        return buf;
    }
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    if (info.dli_sname && info.dli_saddr == fn)
        snprintf(buf, len, "%s:%s", base, info.dli_sname);
    else
        snprintf(buf, len, "%s:%p", base, fn);
    return buf;
}

static void *proc_address(const struct side *s, const char *symbol, CUresult *result)
{
    void *pfn = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *result = s->get_proc_address(symbol, &pfn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (*result == CUDA_SUCCESS && (status != CU_GET_PROC_ADDRESS_SUCCESS || !pfn))
        *result = CUDA_ERROR_NOT_FOUND;
    return *result == CUDA_SUCCESS ? pfn : NULL;
}

/* ---- the kernel ---- */

/* An empty kernel in PTX, JIT-compiled by the driver for whatever GPU it
 * runs: no toolkit needed at build time, and nothing on the GPU to wait for
 * beyond the launch itself.  PTX ISA 8.0 (CUDA 12.0 drivers and newer);
 * .target sm_52 (Maxwell) asks for nothing newer GPUs lack, so the JIT can
 * compile it for any GPU a CUDA 12 or 13 driver supports (checked with
 * ptxas 13.0 for sm_75 and sm_90). */
static const char empty_ptx[] =
    ".version 8.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry empty()\n"
    "{\n"
    "\tret;\n"
    "}\n";

/* The fake driver (test/fake/) cannot run PTX; its module images are strings
 * starting with "fakegpu", and it knows add_one(float *x, int n). */
static const char fake_image[] = "fakegpu";

static void setup_kernel(void)
{
    CUmodule module = NULL;
    CUresult ptx = direct.module_load_data(&module, empty_ptx);
    if (ptx == CUDA_SUCCESS) {
        check(&direct, "cuModuleGetFunction(\"empty\")", direct.module_get_function(&kernel.fn, module, "empty"));
        kernel.params = NULL;
        kernel.what = "empty() from PTX, grid 1, block 1";
        return;
    }

    CUresult fake = direct.module_load_data(&module, fake_image);
    struct cu_error_text ptx_error = cu_error(ptx);
    if (fake != CUDA_SUCCESS) {
        struct cu_error_text fake_error = cu_error(fake);
        die("cannot load a kernel: cuModuleLoadData of PTX failed with %s, and of a \"fakegpu\" image with %s",
            ptx_error.s, fake_error.s);
    }
    check(&direct, "cuModuleGetFunction(\"add_one\")", direct.module_get_function(&kernel.fn, module, "add_one"));
    check(&direct, "cuMemAlloc_v2 (kernel buffer)", direct.mem_alloc(&kernel.buffer, 256));
    kernel.count = 0;
    kernel.param_slots[0] = &kernel.buffer;
    kernel.param_slots[1] = &kernel.count;
    kernel.params = kernel.param_slots;
    static char what[sizeof(ptx_error.s) + 96];
    snprintf(what, sizeof(what), "add_one(x, n = 0) from a \"fakegpu\" image (PTX refused: %s), grid 1, block 1",
             ptx_error.s);
    kernel.what = what;
}

/* ---- the timed loops ----
 *
 * One function per case, shared by both sides: the only thing that differs
 * between a direct and a vgpu measurement is the function pointer called.
 * The pointer is copied to a local so it lives in a register, not reloaded
 * from the table on each call.  noinline keeps the loop code identical
 * whichever call site the compiler sees.  Each loop returns the time it
 * measured, in ns, because the launch loops decide what to leave out. */

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

__attribute__((noinline)) static double loop_forwarded(const struct side *s, long n)
{
    driver_get_version_fn fn = s->driver_get_version;
    int v = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        CUresult r = fn(&v);
        if (__builtin_expect(r != CUDA_SUCCESS, 0))
            call_failed(s, "cuDriverGetVersion", r);
    }
    double t = now_ns() - t0;
    sink_int = v;
    return t;
}

__attribute__((noinline)) static double loop_hooked(const struct side *s, long n)
{
    device_get_count_fn fn = s->device_get_count;
    int count = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        CUresult r = fn(&count);
        if (__builtin_expect(r != CUDA_SUCCESS, 0))
            call_failed(s, "cuDeviceGetCount", r);
    }
    double t = now_ns() - t0;
    sink_int = count;
    return t;
}

/*
 * Launches in batches of LAUNCH_BATCH, each followed by a synchronisation.
 * The synchronisation always goes through the direct table, so both sides
 * pay exactly the same for it and the difference is the launch path alone.
 *
 * with_sync: the time includes the synchronisations (the whole cost of
 * getting the work done).  On a real GPU that is bounded by how fast the GPU
 * retires launches, and the CPU's extra work in vgpu overlaps the GPU's and
 * may not show.  Without: only the launch calls are timed, which is the CPU
 * cost an application's launching thread sees, and where vgpu's cost shows.
 */
static double launch_batches(const struct side *s, long n, bool with_sync)
{
    launch_kernel_fn fn = s->launch;
    CUfunction f = kernel.fn;
    void **params = kernel.params;
    double total = 0;
    for (long done = 0; done < n;) {
        long batch = n - done < LAUNCH_BATCH ? n - done : LAUNCH_BATCH;
        double t0 = now_ns();
        for (long i = 0; i < batch; i++) {
            CUresult r = fn(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
            if (__builtin_expect(r != CUDA_SUCCESS, 0))
                call_failed(s, "cuLaunchKernel", r);
        }
        if (!with_sync)
            total += now_ns() - t0;
        CUresult r = direct.ctx_synchronize();
        if (__builtin_expect(r != CUDA_SUCCESS, 0))
            call_failed(&direct, "cuCtxSynchronize (after launches)", r);
        if (with_sync)
            total += now_ns() - t0;
        done += batch;
    }
    return total;
}

__attribute__((noinline)) static double loop_launch(const struct side *s, long n)
{
    return launch_batches(s, n, true);
}

__attribute__((noinline)) static double loop_launch_calls(const struct side *s, long n)
{
    return launch_batches(s, n, false);
}

__attribute__((noinline)) static double loop_alloc_free(const struct side *s, long n)
{
    mem_alloc_fn alloc = s->mem_alloc;
    mem_free_fn release = s->mem_free;
    CUdeviceptr p = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        CUresult r = alloc(&p, ALLOC_BYTES);
        if (__builtin_expect(r != CUDA_SUCCESS, 0))
            call_failed(s, "cuMemAlloc_v2(1 MiB)", r);
        r = release(p);
        if (__builtin_expect(r != CUDA_SUCCESS, 0))
            call_failed(s, "cuMemFree_v2", r);
    }
    double t = now_ns() - t0;
    sink_ptr = p;
    return t;
}

struct bench_case {
    const char *name;   /* row label, JSON "name" */
    const char *calls;  /* what one timed unit is */
    double target_ns;   /* vgpu's budget for "added", ns; 0: none set */
    long quantum;       /* the call count is a multiple of this */
    double (*loop)(const struct side *s, long n);

    /* Results. */
    long iters;
    double direct_ns[MAX_ROUNDS], vgpu_ns[MAX_ROUNDS]; /* per call, per round */
    double added_ns[MAX_ROUNDS];                       /* vgpu - direct, per round */
    double direct_median, vgpu_median, added_median;
    double noise_ns; /* half the spread of added_ns over the rounds */
};

static struct bench_case cases[] = {
    { .name = "forwarded", .calls = "cuDriverGetVersion (unhooked: trampoline)", .target_ns = 2, .quantum = 1,
      .loop = loop_forwarded },
    { .name = "hooked pass-through", .calls = "cuDeviceGetCount (hooked, backend passes through)", .target_ns = 0,
      .quantum = 1, .loop = loop_hooked },
    { .name = "launch via cuGetProcAddress",
      .calls = "cuLaunchKernel from cuGetProcAddress_v2, timed with one cuCtxSynchronize per 1000",
      .target_ns = 20, .quantum = LAUNCH_BATCH, .loop = loop_launch },
    { .name = "launch, calls only",
      .calls = "the same launches, timing only the cuLaunchKernel calls (synchronisations left out)",
      .target_ns = 20, .quantum = LAUNCH_BATCH, .loop = loop_launch_calls },
    { .name = "alloc+free pair", .calls = "cuMemAlloc_v2(1 MiB) + cuMemFree_v2", .target_ns = 100, .quantum = 1,
      .loop = loop_alloc_free },
};
enum { NCASES = sizeof(cases) / sizeof(cases[0]) };

/* ---- timing ---- */

static long round_up(long n, long quantum)
{
    return (n + quantum - 1) / quantum * quantum;
}

/* The call count for about MEASURE_NS per measurement, from the direct
 * side (which doubles as its warm-up). */
static long calibrate(const struct bench_case *c)
{
    long n = c->quantum;
    for (;;) {
        double t = c->loop(&direct, n);
        if (t >= CALIBRATE_NS || n >= MAX_ITERS) {
            double want = MEASURE_NS / (t > 0 ? t / (double)n : 1.0);
            long iters = want < 1 ? 1 : want > (double)MAX_ITERS ? MAX_ITERS : (long)want;
            return round_up(iters, c->quantum);
        }
        n *= 2;
    }
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double s[MAX_ROUNDS];
    memcpy(s, v, (size_t)n * sizeof(*v));
    qsort(s, (size_t)n, sizeof(*s), by_value);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Half of max - min: how far the rounds stray from their middle. */
static double half_range(const double *v, int n)
{
    double lo = v[0], hi = v[0];
    for (int i = 1; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    return (hi - lo) / 2;
}

static void measure(struct bench_case *c, long iters, int rounds)
{
    c->iters = iters > 0 ? round_up(iters, c->quantum) : calibrate(c);
    long chunk = round_up(c->iters / CHUNKS > 0 ? c->iters / CHUNKS : 1, c->quantum);

    /* Warm both sides: the first vgpu calls go through its lazy stubs, and
     * both sides' code and data should be in cache before the first sample. */
    long warm = c->iters / 8 > c->quantum ? round_up(c->iters / 8, c->quantum) : c->quantum;
    c->loop(&direct, warm);
    c->loop(&vgpu, warm);

    /*
     * Within a round the sides take turns in chunks of about a millisecond,
     * the side going first alternating, so that whatever drifts over a
     * round (CPU and GPU clocks, other tenants) weighs on both alike: on a
     * real GPU a launch varies by several percent from one 50 ms stretch to
     * the next, far more than the nanoseconds vgpu adds.  The per-round
     * difference is therefore the figure to trust for "added", and the
     * spread of those differences says how far to trust it.
     */
    for (int r = 0; r < rounds; r++) {
        double td = 0, tv = 0;
        long k = 0;
        for (long done = 0; done < c->iters; done += chunk, k++) {
            long m = c->iters - done < chunk ? c->iters - done : chunk;
            if ((k + r) % 2 == 0) {
                td += c->loop(&direct, m);
                tv += c->loop(&vgpu, m);
            } else {
                tv += c->loop(&vgpu, m);
                td += c->loop(&direct, m);
            }
        }
        c->direct_ns[r] = td / (double)c->iters;
        c->vgpu_ns[r] = tv / (double)c->iters;
        c->added_ns[r] = c->vgpu_ns[r] - c->direct_ns[r];
    }
    c->direct_median = median(c->direct_ns, rounds);
    c->vgpu_median = median(c->vgpu_ns, rounds);
    c->added_median = median(c->added_ns, rounds);
    c->noise_ns = half_range(c->added_ns, rounds);
}

/* What the figures say about a target.  "within noise" when the rounds'
 * differences spread wider than the gap between the added cost and the
 * target: on a real GPU an allocation takes tens of microseconds and varies
 * by more than the 100 ns budget, and a verdict either way would be made up. */
static const char *verdict(const struct bench_case *c)
{
    double added = c->added_median;
    if (c->target_ns <= 0)
        return NULL;
    if (added + c->noise_ns < c->target_ns)
        return "met";
    if (added - c->noise_ns >= c->target_ns)
        return "NOT met";
    return "within noise";
}

/* ---- setup ---- */

static int pin_to_current_cpu(void)
{
    int cpu = sched_getcpu();
    if (cpu < 0) {
        warn("sched_getcpu: %s; not pinning", strerror(errno));
        return -1;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        warn("sched_setaffinity(%d): %s; not pinning", cpu, strerror(errno));
        return -1;
    }
    return cpu;
}

static char *absolute(const char *what, const char *path)
{
    char *abs = realpath(path, NULL);
    if (!abs)
        die("%s %s: %s", what, path, strerror(errno));
    return abs;
}

/* vgpu must forward to the driver instance the direct side uses, or the two
 * columns measure different drivers.  Unhooked, a name looked up through
 * vgpu's cuGetProcAddress comes back as the driver's own pointer (vgpu only
 * substitutes hooks), so it must equal the direct lookup. */
static void check_same_driver(void)
{
    if (getenv("VGPU_TRACE") && *getenv("VGPU_TRACE")) {
        warn("VGPU_TRACE is set: vgpu logs every call, and the vgpu figures measure the logging");
        return;
    }
    CUresult r;
    void *d = proc_address(&direct, "cuDriverGetVersion", &r);
    if (!d)
        return; /* a minimal driver may not resolve it; nothing to compare */
    void *v = proc_address(&vgpu, "cuDriverGetVersion", &r);
    check(&vgpu, "cuGetProcAddress_v2(\"cuDriverGetVersion\")", r);
    if (d != v) {
        char a[512], b[512];
        die("vgpu does not forward to the driver given with --driver: cuGetProcAddress_v2(\"cuDriverGetVersion\") "
            "gives %s directly but %s through vgpu",
            describe_fn(d, a, sizeof(a)), describe_fn(v, b, sizeof(b)));
    }
}

static void setup_launch(void)
{
    CUresult r;
    direct.launch = (launch_kernel_fn)proc_address(&direct, "cuLaunchKernel", &r);
    check(&direct, "cuGetProcAddress_v2(\"cuLaunchKernel\")", r);
    vgpu.launch = (launch_kernel_fn)proc_address(&vgpu, "cuLaunchKernel", &r);
    check(&vgpu, "cuGetProcAddress_v2(\"cuLaunchKernel\")", r);
    if ((void *)direct.launch == (void *)vgpu.launch)
        warn("vgpu's cuGetProcAddress_v2 returned the driver's own cuLaunchKernel: the launch case measures no hook");
}

/* ---- output ---- */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_array(FILE *f, const double *v, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%.3f", i ? ", " : "", v[i]);
    fputc(']', f);
}

/* f was opened before the run, so that a bad path fails in a second, not
 * after the measurements. */
static void write_json(FILE *f, const char *file, int version, int cpu, int rounds)
{
    fprintf(f, "{\n  \"driver\": {\"path\": ");
    json_string(f, direct.path);
    fprintf(f, ", \"version\": %d},\n  \"vgpu\": {\"path\": ", version);
    json_string(f, vgpu.path);
    fprintf(f, "},\n  \"kernel\": ");
    json_string(f, kernel.what);
    fprintf(f, ",\n  \"launch_sync_every\": %d,\n  \"cpu\": %d,\n  \"rounds\": %d,\n  \"statistic\": \"median\",\n",
            LAUNCH_BATCH, cpu, rounds);
    fprintf(f, "  \"cases\": [\n");
    for (int i = 0; i < NCASES; i++) {
        const struct bench_case *c = &cases[i];
        double added = c->added_median;
        fprintf(f, "    {\"name\": ");
        json_string(f, c->name);
        fprintf(f, ", \"calls\": ");
        json_string(f, c->calls);
        fprintf(f, ", \"iterations\": %ld,\n     \"direct_ns\": %.3f, \"vgpu_ns\": %.3f, \"added_ns\": %.3f, "
                   "\"ratio\": %.4f, \"noise_ns\": %.3f,\n     \"target_added_ns\": ",
                c->iters, c->direct_median, c->vgpu_median, added,
                c->direct_median > 0 ? c->vgpu_median / c->direct_median : 0.0, c->noise_ns);
        const char *v = verdict(c);
        if (v) {
            fprintf(f, "%.0f, \"verdict\": ", c->target_ns);
            json_string(f, v);
        } else {
            fprintf(f, "null, \"verdict\": null");
        }
        fprintf(f, ",\n     \"direct_rounds_ns\": ");
        json_array(f, c->direct_ns, rounds);
        fprintf(f, ",\n     \"vgpu_rounds_ns\": ");
        json_array(f, c->vgpu_ns, rounds);
        fprintf(f, ",\n     \"added_rounds_ns\": ");
        json_array(f, c->added_ns, rounds);
        fprintf(f, "}%s\n", i + 1 < NCASES ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    bool failed = ferror(f) != 0;
    failed |= fclose(f) != 0; /* always close, even after a write error */
    if (failed)
        die("cannot write %s: %s", file, strerror(errno));
}

static void print_table(int rounds)
{
    printf("\n%-28s %11s %11s %11s %10s %9s %7s   %s\n", "case", "calls/round", "direct ns", "vgpu ns",
           "added ns", "noise ns", "ratio", "target (information only)");
    for (int i = 0; i < NCASES; i++) {
        const struct bench_case *c = &cases[i];
        double added = c->added_median;
        const char *v = verdict(c);
        printf("%-28s %11ld %11.2f %11.2f %10.2f %9.2f %7.3f   ", c->name, c->iters, c->direct_median,
               c->vgpu_median, added, c->noise_ns, c->direct_median > 0 ? c->vgpu_median / c->direct_median : 0.0);
        if (v)
            printf("added < %.0f ns: %s\n", c->target_ns, v);
        else
            printf("-\n");
    }
    printf("\nns per call, median of %d rounds; in each round the sides take turns every ~1 ms.\n"
           "added: median of the rounds' vgpu - direct; noise: half the spread of those differences.\n"
           "Per case:\n",
           rounds);
    for (int i = 0; i < NCASES; i++)
        printf("  %-28s %s\n", cases[i].name, cases[i].calls);
}

/* ---- main ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s --driver PATH --vgpu PATH [--iters N] [--rounds R] [--json FILE]\n"
            "\n"
            "Times CUDA driver calls made directly and through vgpu, in one process.\n"
            "  --driver PATH  the real libcuda.so.1 (or the fake one); vgpu is pointed at it\n"
            "                 through VGPU_REAL_LIBCUDA\n"
            "  --vgpu PATH    libvgpu-cuda.so\n"
            "  --iters N      calls per side, case and round (default: calibrated to about\n"
            "                 50 ms; launches are rounded up to a multiple of %d)\n"
            "  --rounds R     rounds per case; medians are reported (default %d)\n"
            "  --json FILE    also write the results as JSON\n",
            progname, LAUNCH_BATCH, DEFAULT_ROUNDS);
}

static long parse_count(const char *opt, const char *text, long max)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < 1 || v > max) {
        fprintf(stderr, "%s: %s wants a whole number from 1 to %ld, not \"%s\"\n", progname, opt, max, text);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "driver", required_argument, NULL, 'd' }, { "vgpu", required_argument, NULL, 'v' },
        { "iters", required_argument, NULL, 'n' },  { "rounds", required_argument, NULL, 'r' },
        { "json", required_argument, NULL, 'j' },   { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *driver_arg = NULL, *vgpu_arg = NULL, *json = NULL;
    long iters = 0;
    int rounds = DEFAULT_ROUNDS;
    int opt;

    if (argc > 0 && argv[0] && *argv[0]) {
        const char *slash = strrchr(argv[0], '/');
        progname = slash ? slash + 1 : argv[0];
    }
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case 'd': driver_arg = optarg; break;
        case 'v': vgpu_arg = optarg; break;
        case 'n': iters = parse_count("--iters", optarg, MAX_ITERS); break;
        case 'r': rounds = (int)parse_count("--rounds", optarg, MAX_ROUNDS); break;
        case 'j': json = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!driver_arg || !vgpu_arg || optind != argc) {
        usage(stderr);
        return 2;
    }

    FILE *json_file = NULL;
    if (json && !(json_file = fopen(json, "w")))
        die("cannot write %s: %s", json, strerror(errno));

    /* Absolute, symlink-free paths: the same string vgpu's pathfinder
     * arrives at (it realpath()s VGPU_REAL_LIBCUDA too), and a report that
     * names the versioned driver file rather than the libcuda.so.1 link. */
    char *driver_path = absolute("--driver", driver_arg);
    char *vgpu_path = absolute("--vgpu", vgpu_arg);
    if (strcmp(driver_path, vgpu_path) == 0)
        die("--driver and --vgpu are the same file (%s)", driver_path);

    /* Before vgpu is loaded, so that its first call resolves this driver
     * whatever else the search would have found. */
    if (setenv("VGPU_REAL_LIBCUDA", driver_path, 1) != 0)
        die("setenv: %s", strerror(errno));
    load_side(&direct, driver_path);
    load_side(&vgpu, vgpu_path);
    if ((void *)direct.driver_get_version == (void *)vgpu.driver_get_version)
        die("%s and %s resolve to the same library: is --vgpu really vgpu?", driver_path, vgpu_path);

    /* The context and everything else on the direct side; vgpu works in
     * the same driver instance, so the current context is shared. */
    CUdevice dev;
    CUcontext ctx;
    int version = 0;
    check(&direct, "cuInit(0)", direct.init(0));
    check(&direct, "cuDriverGetVersion", direct.driver_get_version(&version));
    check(&direct, "cuDeviceGet(0)", direct.device_get(&dev, 0));
    check(&direct, "cuDevicePrimaryCtxRetain", direct.primary_ctx_retain(&ctx, dev));
    check(&direct, "cuCtxSetCurrent", direct.ctx_set_current(ctx));
    /* vgpu resolves the driver and runs admission on its first cuInit: do
     * that now, not inside the first timed loop. */
    check(&vgpu, "cuInit(0)", vgpu.init(0));
    check_same_driver();
    setup_kernel();
    setup_launch();

    /* After setup, not before: threads the driver starts in cuInit and at
     * context creation inherit the affinity of their creator, and would
     * otherwise compete with the timed loops for this one CPU. */
    int cpu = pin_to_current_cpu();

    char da[512], va[512];
    printf("driver: %s (cuDriverGetVersion %d = CUDA %d.%d)\n", direct.path, version, version / 1000,
           version % 1000 / 10);
    printf("vgpu:   %s\n", vgpu.path);
    printf("kernel: %s\n", kernel.what);
    printf("cuLaunchKernel from cuGetProcAddress_v2: direct = %s, vgpu = %s\n",
           describe_fn((void *)direct.launch, da, sizeof(da)), describe_fn((void *)vgpu.launch, va, sizeof(va)));
    printf("launches: cuCtxSynchronize (direct table, both sides) after every %d; the first launch row\n"
           "          includes that time, the second leaves it out\n",
           LAUNCH_BATCH);
    if (cpu >= 0)
        printf("pinned to CPU %d\n", cpu);
    fflush(stdout);

    for (int i = 0; i < NCASES; i++)
        measure(&cases[i], iters, rounds);

    print_table(rounds);
    if (json_file)
        write_json(json_file, json, version, cpu, rounds);

    if (kernel.buffer)
        check(&direct, "cuMemFree_v2 (kernel buffer)", direct.mem_free(kernel.buffer));
    /* The libraries stay loaded: vgpu is built nodelete, and unloading the
     * driver under its own threads at exit gains nothing. */
    free(driver_path);
    free(vgpu_path);
    return 0;
}
