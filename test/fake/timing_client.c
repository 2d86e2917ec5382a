/*
 * The fake GPU's timing model, as a CUDA program sees it:
 * `timing_client SCENARIO [ARGS]`.  Loads the driver as applications do
 * (dlopen, so vgpu, preloaded by the tests, interposes the fake driver) and
 * asserts what CUDA and NVML answer and how long the calls take.
 * test/fake/timing/timing.sh runs the scenarios, the multi-process ones with
 * test/compute/compute_client.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/common/client_util.h"

/* ---- set-up ---- */

static CUfunction busy_fn, fill_fn;

static void setup(void)
{
    CU(F(cuInit)(0));
    CUdevice dev;
    CUcontext ctx;
    CU(F(cuDeviceGet)(&dev, 0));
    CU(F(cuDevicePrimaryCtxRetain)(&ctx, dev));
    CU(F(cuCtxSetCurrent)(ctx));
    CUmodule mod;
    CU(F(cuModuleLoadData)(&mod, "fakegpu"));
    CU(F(cuModuleGetFunction)(&busy_fn, mod, "busy"));
    CU(F(cuModuleGetFunction)(&fill_fn, mod, "fill_u32"));
}

/* busy(ns) on stream s: occupies the device for ms milliseconds. */
static void busy(CUstream s, double ms)
{
    unsigned long long ns = (unsigned long long)(ms * 1e6);
    void *params[] = { &ns };
    CU(F(cuLaunchKernel)(busy_fn, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
}

static CUstream new_stream(void)
{
    CUstream s = NULL;
    CU(F(cuStreamCreate)(&s, CU_STREAM_DEFAULT));
    return s;
}

static CUevent new_event(unsigned flags)
{
    CUevent e = NULL;
    CU(F(cuEventCreate)(&e, flags));
    return e;
}

/* Wall-clock seconds since the epoch: NVML stamps its samples with them. */
static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double ms_since(double t0)
{
    return (now_s() - t0) * 1e3;
}

static float elapsed_ms(CUevent a, CUevent b)
{
    float ms = -1;
    CU(F(cuEventElapsedTime)(&ms, a, b));
    return ms;
}

#define NEAR(value, want, tolerance) ((value) >= (want) * (1 - (tolerance)) && (value) <= (want) * (1 + (tolerance)))

/* The fake driver's own test helpers (vgpu exports only driver names). */
static unsigned long fake_launches(void)
{
    const char *path = getenv("TEST_FAKE_LIBCUDA");
    void *h = path ? dlmopen(LM_ID_BASE, path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    unsigned long (*fn)(void) = h ? (unsigned long (*)(void))dlsym(h, "fakegpu_launches") : NULL;
    CHECK(fn != NULL, "fakegpu_launches not found in %s", path ? path : "(TEST_FAKE_LIBCUDA unset)");
    return fn ? fn() : 0;
}

/* ---- launches ---- */

typedef void (*launcher)(CUstream s, void **params);

static void by_launch_kernel(CUstream s, void **p)
{
    CU(F(cuLaunchKernel)(busy_fn, 1, 1, 1, 1, 1, 1, 0, s, p, NULL));
}

static void by_launch_kernel_ptsz(CUstream s, void **p)
{
    CU(F(cuLaunchKernel_ptsz)(busy_fn, 1, 1, 1, 1, 1, 1, 0, s, p, NULL));
}

static void by_launch_kernel_ex(CUstream s, void **p)
{
    CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
                           .blockDimZ = 1, .hStream = s };
    CU(F(cuLaunchKernelEx)(&cfg, busy_fn, p, NULL));
}

static void by_launch_kernel_ex_ptsz(CUstream s, void **p)
{
    CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
                           .blockDimZ = 1, .hStream = s };
    CU(F(cuLaunchKernelEx_ptsz)(&cfg, busy_fn, p, NULL));
}

static void by_cooperative(CUstream s, void **p)
{
    CU(F(cuLaunchCooperativeKernel)(busy_fn, 1, 1, 1, 1, 1, 1, 0, s, p));
}

static void by_cooperative_ptsz(CUstream s, void **p)
{
    CU(F(cuLaunchCooperativeKernel_ptsz)(busy_fn, 1, 1, 1, 1, 1, 1, 0, s, p));
}

/* A graph captured from a stream, replayed. */
static CUgraphExec capture(CUstream s, int kernels, double ms)
{
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    CU(F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < kernels; i++)
        busy(s, ms);
    CU(F(cuStreamEndCapture)(s, &g));
    CU(F(cuGraphInstantiateWithFlags)(&x, g, 0));
    return x;
}

/* The device time of one replay of x on s, between events around it. */
static float replay_ms(CUgraphExec x, CUstream s)
{
    CUevent e0 = new_event(CU_EVENT_DEFAULT), e1 = new_event(CU_EVENT_DEFAULT);
    CU(F(cuEventRecord)(e0, s));
    CU(F(cuGraphLaunch)(x, s));
    CU(F(cuEventRecord)(e1, s));
    CU(F(cuEventSynchronize)(e1));
    return elapsed_ms(e0, e1);
}

static CUstream g_graph_stream;

static void by_graph(CUstream s, void **p)
{
    (void)p;
    CU(F(cuGraphLaunch)(capture(g_graph_stream, 1, 50), s));
}

static void by_graph_ptsz(CUstream s, void **p)
{
    (void)p;
    CU(F(cuGraphLaunch_ptsz)(capture(g_graph_stream, 1, 50), s));
}

/* Every way of launching returns at once; the work takes its time later. */
static void scenario_launches_return_before_the_kernel_ends(void)
{
    setup();
    g_graph_stream = new_stream();
    static const struct {
        const char *name;
        launcher launch;
    } ways[] = {
        { "cuLaunchKernel", by_launch_kernel },
        { "cuLaunchKernel_ptsz", by_launch_kernel_ptsz },
        { "cuLaunchKernelEx", by_launch_kernel_ex },
        { "cuLaunchKernelEx_ptsz", by_launch_kernel_ex_ptsz },
        { "cuLaunchCooperativeKernel", by_cooperative },
        { "cuLaunchCooperativeKernel_ptsz", by_cooperative_ptsz },
        { "cuGraphLaunch", by_graph },
        { "cuGraphLaunch_ptsz", by_graph_ptsz },
    };
    CUstream s = new_stream();
    for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        unsigned long long ns = 50 * 1000 * 1000;
        void *params[] = { &ns };
        double t0 = now_s();
        ways[i].launch(s, params);
        double launched = ms_since(t0);
        CU(F(cuStreamSynchronize)(s));
        double done = ms_since(t0);
        CHECK(launched < 25, "%s of a 50 ms kernel returned after %.1f ms: launches are asynchronous",
              ways[i].name, launched);
        CHECK(done >= 49.9 && done < 1000, "%s: the stream was synchronised %.1f ms after launching a 50 ms kernel",
              ways[i].name, done);
    }
}

/* A launch-bound loop (kernels of 5 us, a synchronisation every 200) runs at
 * one launch per FAKEGPU_LAUNCH_NS: as fast as a loop that only spins that
 * long, measured in alternating 100 ms rounds so that both see the same
 * load on the machine, and never faster than the launch cost allows. */
static void scenario_launch_bound_loop(void)
{
    setup();
    const char *env = getenv("FAKEGPU_LAUNCH_NS");
    double launch_ns = env ? atof(env) : 2000;
    CUstream s = new_stream();
    unsigned long long kernel_ns = 5000;
    void *params[] = { &kernel_ns };
    __typeof__(&cuLaunchKernel) launch = F(cuLaunchKernel);
    /* Each round's ratio, and the median of them: a round the machine's
     * load spoilt (the fake's device thread not scheduled) does not decide. */
    double ratio[11], launches_all = 0, launch_all_s = 0, spin_rate = 0;
    int rounds = 11;
    for (int round = 0; round < rounds; round++) {
        double t0 = now_s(), t, launches = 0, spins = 0;
        do {
            for (int i = 0; i < 200; i++)
                CU(launch(busy_fn, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
            CU(F(cuStreamSynchronize)(s));
            launches += 200;
        } while ((t = now_s()) - t0 < 0.1);
        double launch_s = t - t0;
        launches_all += launches;
        launch_all_s += launch_s;
        t0 = now_s();
        do {
            for (int i = 0; i < 200; i++) {
                double until = now_s() + launch_ns / 1e9;
                while (now_s() < until)
                    ;
            }
            spins += 200;
        } while ((t = now_s()) - t0 < 0.1);
        spin_rate = spins / (t - t0);
        ratio[round] = (launches / launch_s) / spin_rate;
    }
    for (int i = 1; i < rounds; i++) /* insertion sort: eleven numbers */
        for (int j = i; j > 0 && ratio[j] < ratio[j - 1]; j--) {
            double x = ratio[j];
            ratio[j] = ratio[j - 1];
            ratio[j - 1] = x;
        }
    double median = ratio[rounds / 2], rate = launches_all / launch_all_s, ideal = 1e9 / launch_ns;
    printf("%.0f launches/s, %.0f spins of FAKEGPU_LAUNCH_NS/s (last round), median ratio %.2f, %.0f ideal\n",
           rate, spin_rate, median, ideal);
    /* A sanitizer's instrumentation of each launch's path (vgpu's and the
     * fake's, a few microseconds) is not the fake's timing: its bound is
     * lower there, where 0.74 was seen on a busy 2-core machine. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    const double lowest = 0.6;
#else
    const double lowest = 0.75;
#endif
    CHECK(median >= lowest && median <= 1.25,
          "a launch-bound loop ran at %.2f times the rate of spinning FAKEGPU_LAUNCH_NS=%.0f (median of %d rounds)",
          median, launch_ns, rounds);
    CHECK(rate <= 1.05 * ideal, "%.0f launches/s: faster than FAKEGPU_LAUNCH_NS=%.0f allows", rate, launch_ns);
}

/* ---- streams and events ---- */

/* A stream is NOT_READY while its work is queued, ready after; a stream with
 * nothing queued is ready even while the device is busy. */
static void scenario_stream_query(void)
{
    setup();
    CUstream idle = new_stream();
    static const struct {
        const char *name;
        CUstream stream; /* NULL: a created stream */
    } kinds[] = {
        { "a created stream", NULL },
        { "the legacy stream (NULL)", CU_STREAM_LEGACY },
        { "the per-thread default stream", CU_STREAM_PER_THREAD },
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const char *name = kinds[i].name;
        CUstream s = kinds[i].stream ? kinds[i].stream : new_stream();
        CUevent e = new_event(CU_EVENT_DEFAULT);
        busy(s, 100);
        CU(F(cuEventRecord)(e, s));
        CUresult q = F(cuStreamQuery)(s), eq = F(cuEventQuery)(e), iq = F(cuStreamQuery)(idle);
        CHECK(q == CUDA_ERROR_NOT_READY, "cuStreamQuery(%s) with 100 ms queued: %d, want NOT_READY", name, (int)q);
        CHECK(eq == CUDA_ERROR_NOT_READY, "cuEventQuery after 100 ms queued on %s: %d, want NOT_READY", name,
              (int)eq);
        if (kinds[i].stream != CU_STREAM_LEGACY) /* the legacy stream waits for every stream */
            CHECK(iq == CUDA_SUCCESS, "cuStreamQuery of a stream with nothing queued while %s is busy: %d", name,
                  (int)iq);
        CU(F(cuStreamSynchronize)(s));
        q = F(cuStreamQuery)(s);
        eq = F(cuEventQuery)(e);
        CHECK(q == CUDA_SUCCESS, "cuStreamQuery(%s) after cuStreamSynchronize: %d", name, (int)q);
        CHECK(eq == CUDA_SUCCESS, "cuEventQuery after cuStreamSynchronize(%s): %d", name, (int)eq);
    }
}

/* The time between two events is the device time of the kernels between them. */
static void scenario_events_time_the_kernels(void)
{
    setup();
    CUstream s = new_stream();
    CUevent e0 = new_event(CU_EVENT_DEFAULT), e1 = new_event(CU_EVENT_DEFAULT), e2 = new_event(CU_EVENT_BLOCKING_SYNC);
    busy(s, 200); /* the rest is queued while this runs: the events fall between kernels */
    CU(F(cuEventRecord)(e0, s));
    busy(s, 10);
    CU(F(cuEventRecordWithFlags)(e1, s, CU_EVENT_RECORD_DEFAULT));
    busy(s, 25);
    busy(s, 5);
    CU(F(cuEventRecord)(e2, s));
    CU(F(cuEventSynchronize)(e2));
    float a = elapsed_ms(e0, e1), b = elapsed_ms(e1, e2), v2 = -1;
    CU(F(cuEventElapsedTime_v2)(&v2, e0, e2));
    CHECK(NEAR(a, 10.0, 0.1), "a 10 ms kernel between two events: cuEventElapsedTime says %.3f ms", a);
    CHECK(NEAR(b, 30.0, 0.1), "kernels of 25 and 5 ms between two events: cuEventElapsedTime says %.3f ms", b);
    CHECK(NEAR(v2, 40.0, 0.1), "40 ms of kernels between two events: cuEventElapsedTime_v2 says %.3f ms", v2);
}

/* cuEventElapsedTime refuses what the driver refuses. */
static void scenario_event_elapsed_errors(void)
{
    setup();
    CUstream s = new_stream();
    CUevent timed = new_event(CU_EVENT_DEFAULT), untimed = new_event(CU_EVENT_DISABLE_TIMING);
    CUevent never = new_event(CU_EVENT_DEFAULT), later = new_event(CU_EVENT_DEFAULT);
    float ms = 0;
    CU(F(cuEventRecord)(timed, s));
    CU(F(cuEventRecord)(untimed, s));
    CU(F(cuStreamSynchronize)(s));
    CUresult r = F(cuEventElapsedTime)(&ms, timed, untimed);
    CHECK(r == CUDA_ERROR_INVALID_HANDLE, "elapsed time to a CU_EVENT_DISABLE_TIMING event: %d, want INVALID_HANDLE",
          (int)r);
    r = F(cuEventQuery)(never);
    CHECK(r == CUDA_SUCCESS, "cuEventQuery of an event never recorded: %d, want SUCCESS", (int)r);
    r = F(cuEventElapsedTime)(&ms, never, timed);
    CHECK(r == CUDA_ERROR_INVALID_HANDLE, "elapsed time from an event never recorded: %d, want INVALID_HANDLE",
          (int)r);
    busy(s, 100);
    CU(F(cuEventRecord)(later, s));
    r = F(cuEventElapsedTime)(&ms, timed, later);
    CHECK(r == CUDA_ERROR_NOT_READY, "elapsed time to an event not reached yet: %d, want NOT_READY", (int)r);
    CU(F(cuEventSynchronize)(later));
    r = F(cuEventElapsedTime)(&ms, timed, later);
    CHECK(r == CUDA_SUCCESS && ms >= 99.9f, "elapsed time across a 100 ms kernel, once reached: %d, %.3f ms", (int)r, ms);
}

/* cuCtxSynchronize and the legacy stream wait for every stream; the device
 * runs one kernel at a time. */
static void scenario_synchronize_waits_for_every_stream(void)
{
    setup();
    CUstream a = new_stream(), b = new_stream();
    double t0 = now_s();
    busy(a, 40);
    busy(b, 40);
    CU(F(cuCtxSynchronize)());
    double took = ms_since(t0);
    CHECK(took >= 79.9, "cuCtxSynchronize returned %.1f ms after 40 ms kernels on two streams, want 80", took);
    CHECK(F(cuStreamQuery)(a) == CUDA_SUCCESS && F(cuStreamQuery)(b) == CUDA_SUCCESS,
          "streams not ready after cuCtxSynchronize");
    t0 = now_s();
    busy(a, 40);
    CU(F(cuStreamSynchronize)(NULL));
    took = ms_since(t0);
    CHECK(took >= 39.9, "cuStreamSynchronize(NULL) returned %.1f ms after a 40 ms kernel on another stream", took);
    CHECK(F(cuStreamQuery)(a) == CUDA_SUCCESS, "a stream not ready after the legacy stream was synchronised");
}

/* Copies and memsets on a stream happen after the stream's kernels, and
 * kernel parameters are taken at launch. */
static void scenario_copies_keep_stream_order(void)
{
    setup();
    enum { N = 1024 };
    unsigned host[N];
    CUdeviceptr d;
    CU(F(cuMemAlloc_v2)(&d, sizeof host));
    CUstream s = new_stream(), other = new_stream();
    int n = N;
    unsigned v = 7;
    void *params[] = { &d, &v, &n };

    busy(s, 50);
    CU(F(cuLaunchKernel)(fill_fn, 1, 1, 1, N, 1, 1, 0, s, params, NULL));
    v = 8; /* after the launch: not what the kernel writes */
    double t0 = now_s();
    CU(F(cuMemcpyDtoHAsync_v2)(host, d, sizeof host, s));
    CHECK(ms_since(t0) >= 49.0, "cuMemcpyDtoHAsync_v2 did not wait for the stream's 50 ms kernel");
    CHECK(host[0] == 7 && host[N - 1] == 7, "cuMemcpyDtoHAsync_v2 after fill_u32(7): %u, %u", host[0], host[N - 1]);

    v = 9;
    busy(other, 50);
    CU(F(cuLaunchKernel)(fill_fn, 1, 1, 1, N, 1, 1, 0, other, params, NULL));
    CU(F(cuMemcpyDtoH_v2)(host, d, sizeof host));
    CHECK(host[0] == 9 && host[N - 1] == 9, "cuMemcpyDtoH_v2 after fill_u32(9) on another stream: %u", host[0]);

    v = 3;
    busy(s, 30);
    CU(F(cuMemsetD32Async)(d, 5, N, s));
    CU(F(cuLaunchKernel)(fill_fn, 1, 1, 1, N, 1, 1, 0, s, params, NULL));
    CU(F(cuStreamSynchronize)(s));
    CU(F(cuMemcpyDtoH_v2)(host, d, sizeof host));
    CHECK(host[0] == 3, "cuMemsetD32Async(5) then fill_u32(3) on one stream left %u", host[0]);
    CU(F(cuMemFree_v2)(d));
}

/* ---- graphs and stream capture ---- */

/* A graph captured from a stream replays its kernels' time, for one launch call. */
static void scenario_captured_graph_replays_its_kernels(void)
{
    setup();
    CUstream s = new_stream();
    unsigned long before = fake_launches();
    CUgraphExec x = capture(s, 5, 10);
    CHECK(fake_launches() == before, "kernels launched on a capturing stream ran");
    CUevent e0 = new_event(CU_EVENT_DEFAULT), e1 = new_event(CU_EVENT_DEFAULT);
    CU(F(cuEventRecord)(e0, s));
    double t0 = now_s();
    CU(F(cuGraphLaunch)(x, s));
    double launched = ms_since(t0);
    CU(F(cuGraphLaunch)(x, s));
    CU(F(cuEventRecord)(e1, s));
    CU(F(cuEventSynchronize)(e1));
    float ms = elapsed_ms(e0, e1);
    CHECK(launched < 25, "cuGraphLaunch of 50 ms of kernels returned after %.1f ms", launched);
    CHECK(NEAR(ms, 100.0, 0.1), "two replays of a graph of 5 kernels of 10 ms: %.3f ms between events", ms);
}

/* A graph with no kernels the fake knows of (not captured) takes
 * FAKEGPU_KERNEL_NS, which the test sets to 20 ms. */
static void scenario_graph_without_kernels_takes_one_kernel_time(void)
{
    setup();
    CUstream s = new_stream();
    CUgraph g;
    CUgraphExec x;
    CU(F(cuGraphCreate)(&g, 0));
    CU(F(cuGraphInstantiateWithFlags)(&x, g, 0));
    float ms = replay_ms(x, s);
    CHECK(NEAR(ms, 20.0, 0.1), "a graph created empty, with FAKEGPU_KERNEL_NS=20000000: %.3f ms", ms);
}

/* cuStreamIsCapturing and cuStreamGetCaptureInfo tell the truth; what a
 * capture cannot hold ends it. */
static void scenario_stream_capture_reports_its_state(void)
{
    setup();
    CUstream s = new_stream();
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CU(F(cuStreamIsCapturing)(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE, "a new stream is capturing: %d", (int)st);

    CU(F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(F(cuStreamIsCapturing)(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "cuStreamIsCapturing during a capture: %d", (int)st);
    cuuint64_t id = 0;
    CUgraph g = NULL;
    const CUgraphNode *deps = NULL;
    size_t ndeps = 1;
    CU(F(cuStreamGetCaptureInfo_v3)(s, &st, &id, &g, &deps, NULL, &ndeps));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && g != NULL,
          "cuStreamGetCaptureInfo_v3 during a capture: status %d, id %llu, graph %p", (int)st,
          (unsigned long long)id, (void *)g);
    CUresult r = F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CHECK(r == CUDA_ERROR_ILLEGAL_STATE, "cuStreamBeginCapture_v2 on a capturing stream: %d", (int)r);
    double t0 = now_s();
    busy(s, 1000);
    CHECK(ms_since(t0) < 25, "a launch on a capturing stream waited");
    CU(F(cuStreamEndCapture)(s, &g));
    CHECK(g != NULL, "cuStreamEndCapture gave no graph");
    CU(F(cuStreamIsCapturing)(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE, "cuStreamIsCapturing after the capture: %d", (int)st);
    CHECK(F(cuStreamQuery)(s) == CUDA_SUCCESS, "the kernel captured (not run) left the stream busy");
    r = F(cuStreamEndCapture)(s, &g);
    CHECK(r == CUDA_ERROR_ILLEGAL_STATE, "cuStreamEndCapture without a capture: %d", (int)r);

    r = F(cuStreamBeginCapture_v2)(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CHECK(r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "capturing the legacy stream: %d", (int)r);

    CU(F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    r = F(cuStreamSynchronize)(s);
    CHECK(r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuStreamSynchronize of a capturing stream: %d", (int)r);
    CU(F(cuStreamIsCapturing)(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED, "the capture after a synchronisation: %d", (int)st);
    r = F(cuStreamEndCapture)(s, &g);
    CHECK(r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && g == NULL,
          "cuStreamEndCapture of an invalidated capture: %d, graph %p", (int)r, (void *)g);
}

/* The driver's rule on calls that may break a capture: a query or a
 * synchronisation from a thread in the global mode while a global capture
 * is under way (its own, or another thread's) fails and invalidates it; a
 * thread that switched to the relaxed mode may make them. */
static CUcontext g_ctx;
static CUresult g_other_query;

static void *query_from_another_thread(void *ev)
{
    CU(F(cuCtxSetCurrent)(g_ctx));
    g_other_query = F(cuEventQuery)((CUevent)ev);
    return NULL;
}

static void scenario_global_capture_forbids_queries(void)
{
    setup();
    CU(F(cuCtxGetCurrent)(&g_ctx));
    CUstream s = new_stream();
    CUevent e = new_event(CU_EVENT_DEFAULT);
    CU(F(cuEventRecord)(e, s)); /* before the capture: an ordinary event */
    CU(F(cuEventSynchronize)(e));
    CUgraph g = NULL;

    CU(F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    busy(s, 1);
    CUresult r = F(cuEventQuery)(e);
    CHECK(r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuEventQuery during this thread's global capture: %d", (int)r);
    r = F(cuStreamEndCapture)(s, &g);
    CHECK(r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "the capture after the query ended with %d", (int)r);

    CU(F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CU(F(cuThreadExchangeStreamCaptureMode)(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL, "the thread's capture mode was %d, not global", (int)mode);
    CU(F(cuEventQuery)(e));
    CU(F(cuEventSynchronize)(e));
    CU(F(cuThreadExchangeStreamCaptureMode)(&mode));
    busy(s, 1);
    CU(F(cuStreamEndCapture)(s, &g));
    CHECK(g != NULL, "a capture with relaxed queries in it gave no graph");

    /* Another thread, in the global mode (a thread's default). */
    CU(F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    pthread_t t;
    pthread_create(&t, NULL, query_from_another_thread, e);
    pthread_join(t, NULL);
    CHECK(g_other_query == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
          "cuEventQuery from another thread during a global capture: %d", (int)g_other_query);
    r = F(cuStreamEndCapture)(s, &g);
    CHECK(r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "the capture after the other thread's query ended with %d",
          (int)r);

    /* A thread-local capture ignores other threads. */
    CU(F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    pthread_create(&t, NULL, query_from_another_thread, e);
    pthread_join(t, NULL);
    CHECK(g_other_query == CUDA_SUCCESS, "cuEventQuery from another thread during a thread-local capture: %d",
          (int)g_other_query);
    CU(F(cuStreamEndCapture)(s, &g));
}

/* PyTorch's cudaMallocAsync backend in a CUDA graph (timing.sh runs this
 * under a memory quota): a stream-ordered allocation inside a capture is a
 * memory node of the graph, and vgpu must not read the pool around it. */
static void scenario_async_alloc_in_a_capture(void)
{
    setup();
    CUstream s = new_stream();
    CUdeviceptr before, inside;
    CU(F(cuMemAllocAsync)(&before, 1 << 20, s)); /* the pool is vgpu's to count from here */
    CU(F(cuStreamSynchronize)(s));
    CUgraph g = NULL;
    CU(F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(F(cuMemAllocAsync)(&inside, 64 << 20, s));
    busy(s, 1); /* (the fake does not model a free inside a capture) */
    CU(F(cuStreamEndCapture)(s, &g));
    CHECK(g != NULL, "a capture with a stream-ordered allocation gave no graph");
    CU(F(cuMemFreeAsync)(before, s));
    CU(F(cuStreamSynchronize)(s));
}

/* What PyTorch and vLLM do under a compute share (test/compute/compute.sh runs this
 * with one): a stream that ran kernels (so vgpu has markers on it) is
 * captured, while another thread keeps launching on a stream of its own;
 * the capture holds, its launches do not wait for the GPU (they run
 * nothing), and the graph replays.  Under a hard cap of 10%, the 60 ms
 * of kernels before use up its budget: a captured launch that waited at
 * the gate would wait hundreds of milliseconds. */
static volatile int g_stop;

static void *launch_meanwhile(void *unused)
{
    (void)unused;
    CU(F(cuCtxSetCurrent)(g_ctx));
    CUstream s = new_stream();
    while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED))
        busy(s, 0.5);
    CU(F(cuStreamSynchronize)(s));
    return NULL;
}

static void scenario_capture_under_a_compute_share(void)
{
    setup();
    CU(F(cuCtxGetCurrent)(&g_ctx));
    CUstream s = new_stream();
    for (int i = 0; i < 60; i++) /* past the first quantum: markers on s, some done, some not */
        busy(s, 1);
    pthread_t t;
    pthread_create(&t, NULL, launch_meanwhile, NULL);
    for (int round = 0; round < 3; round++) {
        CUgraph g = NULL;
        CUgraphExec x = NULL;
        CU(F(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        double t0 = now_s();
        for (int i = 0; i < 100; i++)
            busy(s, 0.2);
        double took = ms_since(t0);
        CU(F(cuStreamEndCapture)(s, &g));
        CHECK(took < 100, "capturing 100 kernels took %.1f ms: captured launches waited", took);
        CU(F(cuGraphInstantiateWithFlags)(&x, g, 0));
        float ms = replay_ms(x, s);
        CHECK(ms >= 19.9, "a replay of 100 captured kernels of 0.2 ms took %.1f ms of device time", ms);
    }
    __atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
    pthread_join(t, NULL);
    if (!atomic_load(&failures))
        printf("ok a stream with markers captured three times beside a launching thread, under a compute share\n");
}

/* ---- processes ---- */

/* A forked child has no executor until it launches; then it runs its own. */
static void scenario_fork_child_runs_its_own_kernels(void)
{
    setup();
    double t0 = now_s();
    busy(NULL, 200);
    pid_t pid = fork();
    if (pid == 0) {
        double c0 = now_s();
        busy(NULL, 10);
        CU(F(cuCtxSynchronize)());
        double took = ms_since(c0);
        CHECK(took >= 9.9 && took < 150, "a forked child's 10 ms kernel took %.1f ms", took);
        _exit(failures ? 1 : 0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the forked child failed (status %#x)", status);
    CU(F(cuCtxSynchronize)());
    CHECK(ms_since(t0) >= 199.9, "the parent's 200 ms kernel did not survive the fork");
}

/* 10 s of kernels queued, then exit without synchronising: timing.sh checks
 * that the process ends at once. */
static void scenario_exit_with_work_queued(void)
{
    setup();
    for (int i = 0; i < 20; i++)
        busy(NULL, 500);
}

/* ---- NVML ---- */

static void check_util(const char *what, int pid, unsigned util, int lo, int hi)
{
    CHECK((int)util >= lo && (int)util <= hi, "%s of pid %d: %u%%, want %d..%d", what, pid, util, lo, hi);
}

/* nvml-shows GPU_LO GPU_HI [PID LO HI]...: the utilization of device 0 and
 * of each process, by both process queries. */
static void scenario_nvml_shows(int argc, char **argv)
{
    if (argc < 4 || (argc - 4) % 3 != 0) {
        fprintf(stderr, "usage: timing_client nvml-shows GPU_LO GPU_HI [PID LO HI]...\n");
        exit(2);
    }
    NV(N(nvmlInit_v2)());
    nvmlDevice_t dev;
    NV(N(nvmlDeviceGetHandleByIndex_v2)(0, &dev));
    nvmlUtilization_t u = { 0, 0 };
    NV(N(nvmlDeviceGetUtilizationRates)(dev, &u));
    printf("nvmlDeviceGetUtilizationRates: gpu %u%%\n", u.gpu);
    CHECK((int)u.gpu >= atoi(argv[2]) && (int)u.gpu <= atoi(argv[3]), "nvmlDeviceGetUtilizationRates: gpu %u%%, want %s..%s",
          u.gpu, argv[2], argv[3]);

    /* Samples of the last second (a real NVML keeps several per process). */
    unsigned long long since_us = (unsigned long long)(wall_s() * 1e6) - 1000000;
    unsigned n = 0;
    nvmlReturn_t r = N(nvmlDeviceGetProcessUtilization)(dev, NULL, &n, since_us);
    CHECK(r == NVML_ERROR_INSUFFICIENT_SIZE && n >= (unsigned)(argc - 4) / 3,
          "nvmlDeviceGetProcessUtilization(NULL): %d, %u samples", (int)r, n);
    nvmlProcessUtilizationSample_t samples[1024];
    n = 1024;
    NV(N(nvmlDeviceGetProcessUtilization)(dev, samples, &n, since_us));
    nvmlProcessUtilizationInfo_v1_t infos[1024];
    nvmlProcessesUtilizationInfo_t info = { .version = nvmlProcessesUtilizationInfo_v1, .processSamplesCount = 1024,
                                            .lastSeenTimeStamp = since_us, .procUtilArray = infos };
    NV(N(nvmlDeviceGetProcessesUtilizationInfo)(dev, &info));
    for (int i = 4; i + 2 < argc; i += 3) {
        int pid = atoi(argv[i]), lo = atoi(argv[i + 1]), hi = atoi(argv[i + 2]);
        int seen = 0, seen_info = 0;
        for (unsigned k = 0; k < n; k++)
            if ((int)samples[k].pid == pid) {
                printf("pid %d: smUtil %u%%\n", pid, samples[k].smUtil);
                check_util("nvmlDeviceGetProcessUtilization smUtil", pid, samples[k].smUtil, lo, hi);
                seen++;
            }
        for (unsigned k = 0; k < info.processSamplesCount; k++)
            if ((int)infos[k].pid == pid) {
                check_util("nvmlDeviceGetProcessesUtilizationInfo smUtil", pid, infos[k].smUtil, lo, hi);
                seen_info++;
            }
        CHECK(seen && seen_info, "pid %d: %d and %d samples in the two queries, want some in each", pid, seen,
              seen_info);
    }
}

/* A device nobody used: 0% and no process samples. */
static void scenario_nvml_idle_device(void)
{
    NV(N(nvmlInit_v2)());
    nvmlDevice_t dev;
    NV(N(nvmlDeviceGetHandleByIndex_v2)(1, &dev));
    nvmlUtilization_t u = { 1, 1 };
    NV(N(nvmlDeviceGetUtilizationRates)(dev, &u));
    CHECK(u.gpu == 0, "an idle device's utilization: %u%%", u.gpu);
    unsigned n = 4;
    nvmlProcessUtilizationSample_t samples[4];
    nvmlReturn_t r = N(nvmlDeviceGetProcessUtilization)(dev, samples, &n, 0);
    CHECK(r == NVML_ERROR_NOT_FOUND && n == 0, "process utilization of an idle device: %d, %u samples", (int)r, n);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } scenarios[] = {
        { "launches-return-before-the-kernel-ends", scenario_launches_return_before_the_kernel_ends },
        { "launch-bound-loop-runs-at-one-launch-per-FAKEGPU_LAUNCH_NS", scenario_launch_bound_loop },
        { "stream-query-is-not-ready-until-its-work-is-done", scenario_stream_query },
        { "events-time-the-kernels", scenario_events_time_the_kernels },
        { "event-elapsed-errors", scenario_event_elapsed_errors },
        { "synchronize-waits-for-every-stream", scenario_synchronize_waits_for_every_stream },
        { "copies-keep-stream-order", scenario_copies_keep_stream_order },
        { "captured-graph-replays-its-kernels", scenario_captured_graph_replays_its_kernels },
        { "graph-without-kernels-takes-one-kernel-time", scenario_graph_without_kernels_takes_one_kernel_time },
        { "stream-capture-reports-its-state", scenario_stream_capture_reports_its_state },
        { "global-capture-forbids-queries", scenario_global_capture_forbids_queries },
        { "async-alloc-in-a-capture", scenario_async_alloc_in_a_capture },
        { "capture-under-a-compute-share", scenario_capture_under_a_compute_share },
        { "fork-child-runs-its-own-kernels", scenario_fork_child_runs_its_own_kernels },
        { "exit-with-work-queued", scenario_exit_with_work_queued },
        { "nvml-idle-device", scenario_nvml_idle_device },
    };
    if (argc >= 2 && strcmp(argv[1], "nvml-shows") == 0) {
        scenario_nvml_shows(argc, argv);
    } else {
        size_t i = 0;
        while (argc >= 2 && i < sizeof scenarios / sizeof scenarios[0] && strcmp(argv[1], scenarios[i].name) != 0)
            i++;
        if (argc < 2 || i == sizeof scenarios / sizeof scenarios[0]) {
            fprintf(stderr, "usage: timing_client SCENARIO\n");
            return 2;
        }
        scenarios[i].run();
    }
    if (failures)
        return 1;
    printf("ok - %s\n", argv[1]);
    return 0;
}
