/*
 * compute_client: a compute load whose share of the GPU can be measured.
 *
 *   compute_client MODE SECONDS [--kernel-us N] [--batch N] [--stream] [--graph] [--sync-each]
 *                         [--start-at EPOCH_MS] [--warm-up-ms N] [--device N] [--units-per-us X]
 *
 * MODE matmul: kernels of 200 us (--kernel-us), launched as fast as the
 *      launch call returns, in batches of 50 (--batch): the host
 *      waits for a batch to finish once it queued the next, as a framework's
 *      training loop does.  The device is the bottleneck.
 * MODE launch: kernels of 1 us, in batches of 1000: the host-side cost of
 *      the launch call is the bottleneck.
 * --stream   launches on a created stream instead of the legacy one.
 * --graph    each batch is one replay of a graph captured from a stream
 *            (implies --stream).
 * --sync-each  the host waits for each batch before it launches the next,
 *            as a decode loop does (a token's kernels, then a synchronize):
 *            the device idles while the host launches the next batch's
 *            first kernels, then runs behind the host.
 * --start-at waits until that wall-clock time (ms since the epoch), after
 *            setting up, so that several processes start together.
 * --warm-up-ms runs batches for that long first, and waits for them, as a
 *            framework's warm-up does before a pause (a benchmark's start
 *            signal, a request that has not come yet).
 * --around-the-gate  sets up through vgpu (admitted, counted), then launches
 *            and waits through the driver behind it (the fake, found with
 *            dlmopen as TEST_FAKE_LIBCUDA names it), as a process that goes
 *            around vgpu's compute share does.
 *
 * It runs on the primary context of device 0 (--device), loading the driver
 * as applications do (dlopen("libcuda.so.1"), so vgpu interposes it).  On
 * the fake driver (test/fake) the kernel is its built-in busy(ns); on a
 * real GPU a PTX loop of dependent FMAs over every SM, whose length is
 * calibrated first so that one kernel takes --kernel-us alone: loop
 * iterations per microsecond, printed as units_per_us; --units-per-us
 * gives it instead (processes that start together must not calibrate
 * together).
 *
 * At the end it prints one line (named "workload", what the scripts read):
 *   workload mode=matmul pid=P kernels=N seconds=S kernels_per_s=R busy_s=B
 *            device_s=D share=F launch_cpu_s=C units_per_us=U
 * kernels: kernels completed; seconds: from the start to the last
 * synchronisation; busy_s: kernels x --kernel-us, the device time its
 * kernels take; share: busy_s / seconds; device_s: the device time its
 * batches spanned, measured by events with timing (with other processes on
 * the GPU, their turns inside a batch count too, as on any GPU);
 * launch_cpu_s: CPU time of the launching thread.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test/common/client_util.h"

struct options {
    const char *mode;
    double seconds;
    double kernel_us;
    unsigned batch_kernels;
    int stream;
    int graph;
    long long start_at_ms;
    double warm_up_ms;
    int device;
    double units_per_us; /* 0: calibrate (real GPU) */
    int around_the_gate;
    int sync_each;
};

/* The driver calls the loop makes, resolved once. */
static struct {
    __typeof__(&cuLaunchKernel) launch;
    __typeof__(&cuEventRecord) record;
    __typeof__(&cuEventSynchronize) event_sync;
    __typeof__(&cuEventElapsedTime) elapsed;
    __typeof__(&cuGraphLaunch) graph_launch;
} drv;

static void die(const char *what, CUresult r)
{
    const char *name = NULL;
    F(cuGetErrorName)(r, &name);
    fprintf(stderr, "compute_client: %s failed: %s (%d)\n", what, name ? name : "?", (int)r);
    exit(1);
}

#define MUST(call)                                                                                                     \
    do {                                                                                                               \
        CUresult must_r_ = (call);                                                                                     \
        if (must_r_ != CUDA_SUCCESS)                                                                                   \
            die(#call, must_r_);                                                                                       \
    } while (0)

static void usage(void)
{
    fprintf(stderr, "usage: compute_client matmul|launch SECONDS [--kernel-us N] [--batch N] [--stream] "
                    "[--graph] [--start-at EPOCH_MS] [--warm-up-ms N] [--device N] [--units-per-us X] "
                    "[--around-the-gate] [--sync-each]\n");
    exit(2);
}

static struct options parse(int argc, char **argv)
{
    if (argc < 3)
        usage();
    struct options o = { .mode = argv[1], .seconds = atof(argv[2]), .start_at_ms = -1 };
    if (strcmp(o.mode, "matmul") == 0) {
        o.kernel_us = 200;
        o.batch_kernels = 50;
    } else if (strcmp(o.mode, "launch") == 0) {
        o.kernel_us = 1;
        o.batch_kernels = 1000;
    } else {
        usage();
    }
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--stream") == 0)
            o.stream = 1;
        else if (strcmp(a, "--graph") == 0)
            o.graph = o.stream = 1;
        else if (strcmp(a, "--kernel-us") == 0 && v)
            o.kernel_us = atof(argv[++i]);
        else if (strcmp(a, "--batch") == 0 && v)
            o.batch_kernels = (unsigned)atoi(argv[++i]);
        else if (strcmp(a, "--start-at") == 0 && v)
            o.start_at_ms = atoll(argv[++i]);
        else if (strcmp(a, "--warm-up-ms") == 0 && v)
            o.warm_up_ms = atof(argv[++i]);
        else if (strcmp(a, "--device") == 0 && v)
            o.device = atoi(argv[++i]);
        else if (strcmp(a, "--units-per-us") == 0 && v)
            o.units_per_us = atof(argv[++i]);
        else if (strcmp(a, "--around-the-gate") == 0)
            o.around_the_gate = 1;
        else if (strcmp(a, "--sync-each") == 0)
            o.sync_each = 1;
        else
            usage();
    }
    if (o.seconds <= 0 || o.kernel_us < 0 || o.batch_kernels == 0)
        usage();
    return o;
}

/* ---- the kernel ---- */

/* On a real GPU: a fixed amount of work per thread (so that it takes longer
 * when it has to share the GPU), kept alive by a store it never makes. */
static const char busy_ptx[] = ".version 7.0\n"
                               ".target sm_70\n"
                               ".address_size 64\n"
                               ".global .f32 sink;\n"
                               ".visible .entry busy(.param .u64 iterations)\n"
                               "{\n"
                               "  .reg .pred %p;\n"
                               "  .reg .u64 %i, %n;\n"
                               "  .reg .f32 %x;\n"
                               "  ld.param.u64 %n, [iterations];\n"
                               "  mov.u64 %i, 0;\n"
                               "  mov.f32 %x, 0f3F800000;\n"
                               "  setp.eq.u64 %p, %n, 0;\n"
                               "  @%p bra DONE;\n"
                               "LOOP:\n"
                               "  fma.rn.f32 %x, %x, 0f3F7FFFF0, 0f3A83126F;\n"
                               "  add.u64 %i, %i, 1;\n"
                               "  setp.lt.u64 %p, %i, %n;\n"
                               "  @%p bra LOOP;\n"
                               "DONE:\n"
                               "  setp.eq.f32 %p, %x, 0f00000000;\n"
                               "  @%p st.global.f32 [sink], %x;\n"
                               "  ret;\n"
                               "}\n";

struct kernel {
    CUfunction fn;
    unsigned grid, block;
    double units_per_us; /* the busy parameter for one microsecond */
};

static double elapsed_ms(CUevent a, CUevent b)
{
    float ms = 0;
    MUST(drv.elapsed(&ms, a, b));
    return ms;
}

/* How many PTX loop iterations make one microsecond on this GPU, alone. */
static double calibrate(struct kernel *k, CUstream s)
{
    CUevent a, b;
    MUST(F(cuEventCreate)(&a, CU_EVENT_DEFAULT));
    MUST(F(cuEventCreate)(&b, CU_EVENT_DEFAULT));
    unsigned long long iterations = 20000;
    double ms = 0;
    for (int round = 0; round < 3; round++) { /* the first warms up */
        void *params[] = { &iterations };
        MUST(drv.record(a, s));
        MUST(drv.launch(k->fn, k->grid, 1, 1, k->block, 1, 1, 0, s, params, NULL));
        MUST(drv.record(b, s));
        MUST(drv.event_sync(b));
        ms = elapsed_ms(a, b);
    }
    F(cuEventDestroy_v2)(a);
    F(cuEventDestroy_v2)(b);
    return ms > 0 ? (double)iterations / (ms * 1000.0) : 1.0;
}

static struct kernel load_kernel(int device, CUstream s, double units_per_us)
{
    struct kernel k = { .grid = 1, .block = 1, .units_per_us = 1000.0 };
    CUmodule mod;
    if (F(cuModuleLoadData)(&mod, "fakegpu") == CUDA_SUCCESS) { /* the fake: busy(ns) */
        MUST(F(cuModuleGetFunction)(&k.fn, mod, "busy"));
        return k;
    }
    MUST(F(cuModuleLoadData)(&mod, busy_ptx));
    MUST(F(cuModuleGetFunction)(&k.fn, mod, "busy"));
    int sms = 0;
    MUST(F(cuDeviceGetAttribute)(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
    k.block = 256;
    k.grid = (unsigned)sms * 8; /* every SM full */
    k.units_per_us = units_per_us > 0 ? units_per_us : calibrate(&k, s);
    return k;
}

/* ---- the loop ---- */

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void wait_until_epoch_ms(long long ms)
{
    struct timespec until = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
}

static void launch_batch(const struct options *o, const struct kernel *k, CUstream s, void **params)
{
    for (unsigned i = 0; i < o->batch_kernels; i++) {
        CUresult r = drv.launch(k->fn, k->grid, 1, 1, k->block, 1, 1, 0, s, params, NULL);
        if (r != CUDA_SUCCESS)
            die("cuLaunchKernel", r);
    }
}

/* The loop's calls, from now on the driver's own behind vgpu. */
static void go_around_the_gate(void)
{
    void *launch = fake_driver_sym("cuLaunchKernel"), *record = fake_driver_sym("cuEventRecord"),
         *event_sync = fake_driver_sym("cuEventSynchronize"), *elapsed = fake_driver_sym("cuEventElapsedTime"),
         *graph_launch = fake_driver_sym("cuGraphLaunch");
    if (!launch || !record || !event_sync || !elapsed || !graph_launch) {
        fprintf(stderr, "compute_client: --around-the-gate: no driver behind vgpu (TEST_FAKE_LIBCUDA)\n");
        exit(1);
    }
    drv.launch = (__typeof__(drv.launch))launch;
    drv.record = (__typeof__(drv.record))record;
    drv.event_sync = (__typeof__(drv.event_sync))event_sync;
    drv.elapsed = (__typeof__(drv.elapsed))elapsed;
    drv.graph_launch = (__typeof__(drv.graph_launch))graph_launch;
}

/* What the loop runs: the kernel, its stream and parameter, the graph of a
 * batch (--graph), and the events of the two batches in flight. */
struct loop {
    const struct options *o;
    struct kernel k;
    CUstream s;
    unsigned long long units;
    void *params[1];
    CUgraphExec exec;
    CUevent start[2], end[2];
};

/* Device o->device's primary context, current; the loop's calls through vgpu. */
static void start_on_the_device(const struct options *o, struct loop *l)
{
    drv.launch = F(cuLaunchKernel);
    drv.record = F(cuEventRecord);
    drv.event_sync = F(cuEventSynchronize);
    drv.elapsed = F(cuEventElapsedTime);
    drv.graph_launch = F(cuGraphLaunch);
    MUST(F(cuInit)(0));
    CUdevice dev;
    CUcontext ctx;
    MUST(F(cuDeviceGet)(&dev, o->device));
    MUST(F(cuDevicePrimaryCtxRetain)(&ctx, dev));
    MUST(F(cuCtxSetCurrent)(ctx));
    l->o = o;
    l->s = NULL;
    if (o->stream)
        MUST(F(cuStreamCreate)(&l->s, CU_STREAM_NON_BLOCKING));
    l->k = load_kernel(dev, l->s, o->units_per_us);
}

static void prepare_the_loop(struct loop *l)
{
    l->units = (unsigned long long)(l->o->kernel_us * l->k.units_per_us + 0.5);
    l->params[0] = &l->units;
    l->exec = NULL;
    if (l->o->graph) {
        CUgraph g;
        MUST(F(cuStreamBeginCapture_v2)(l->s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        launch_batch(l->o, &l->k, l->s, l->params);
        MUST(F(cuStreamEndCapture)(l->s, &g));
        MUST(F(cuGraphInstantiateWithFlags)(&l->exec, g, 0));
    }
    for (int i = 0; i < 2; i++) {
        MUST(F(cuEventCreate)(&l->start[i], CU_EVENT_DEFAULT));
        MUST(F(cuEventCreate)(&l->end[i], CU_EVENT_DEFAULT));
    }
}

static void run_batch(struct loop *l)
{
    if (l->exec)
        MUST(drv.graph_launch(l->exec, l->s));
    else
        launch_batch(l->o, &l->k, l->s, l->params);
}

/* --warm-up-ms: batches, each waited for. */
static void warm_up(struct loop *l)
{
    for (double w0 = now_s(); (now_s() - w0) * 1e3 < l->o->warm_up_ms;) {
        run_batch(l);
        MUST(drv.record(l->end[0], l->s));
        MUST(drv.event_sync(l->end[0]));
    }
}

/* What the measured loop did: its kernels, their device time, and when it
 * began and last saw a batch end. */
struct measured {
    unsigned long long kernels;
    double device_ms, t0, t1, cpu0;
};

/* Batch b's end waited for, and counted. */
static void count_batch(struct loop *l, int b, struct measured *m)
{
    MUST(drv.event_sync(l->end[b]));
    m->device_ms += elapsed_ms(l->start[b], l->end[b]);
    m->kernels += l->o->batch_kernels;
    m->t1 = now_s();
}

/* Two batches in flight: the host waits for the one before the one it just
 * queued, so the device never waits for the host to wake up (--sync-each:
 * each batch waited for before the next). */
static struct measured measure(struct loop *l)
{
    struct measured m = { .t0 = now_s(), .cpu0 = thread_cpu_s() };
    m.t1 = m.t0;
    for (unsigned long long batch = 0;; batch++) {
        int b = (int)(batch % 2), prev = 1 - b;
        int last = m.t1 - m.t0 >= l->o->seconds;
        if (!last) {
            MUST(drv.record(l->start[b], l->s));
            run_batch(l);
            MUST(drv.record(l->end[b], l->s));
        }
        if (l->o->sync_each) { /* nothing else in flight: this batch is the whole queue */
            if (last)
                break;
            count_batch(l, b, &m);
            continue;
        }
        if (batch > 0)
            count_batch(l, prev, &m);
        if (last)
            break;
    }
    return m;
}

int main(int argc, char **argv)
{
    struct options o = parse(argc, argv);
    (void)nvml_handle; /* client_util.h's: this program needs no NVML */
    struct loop l;
    start_on_the_device(&o, &l);
    if (o.around_the_gate)
        go_around_the_gate();
    prepare_the_loop(&l);
    warm_up(&l);
    if (o.start_at_ms >= 0)
        wait_until_epoch_ms(o.start_at_ms);
    struct measured m = measure(&l);
    double seconds = m.t1 - m.t0, busy_s = (double)m.kernels * o.kernel_us / 1e6;
    printf("workload mode=%s pid=%d kernels=%llu seconds=%.3f kernels_per_s=%.1f busy_s=%.4f device_s=%.4f "
           "share=%.3f launch_cpu_s=%.3f units_per_us=%.3f\n",
           o.mode, (int)getpid(), m.kernels, seconds, (double)m.kernels / seconds, busy_s, m.device_ms / 1000.0,
           busy_s / seconds, thread_cpu_s() - m.cpu0, l.k.units_per_us);
    return 0;
}
