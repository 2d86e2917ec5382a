/*
 * A process under vgpu-mediatord, end to end: `mediator_client SCENARIO
 * [ARGS]`.  Loads the driver as applications do, with vgpu preloaded over
 * the fake driver, and asserts what a user observes.  test/mediator/mediator.sh
 * starts the mediator with each scenario's config and drives the processes.
 *
 *   admitted QUOTA            the vGPU's quota is what CUDA and NVML show;
 *                             past it OUT_OF_MEMORY, within it success
 *   refused                   cuInit NO_DEVICE, NVML 0 devices
 *   hold BYTES READY GO [MORE]  allocate BYTES, write READY (our pid), wait
 *                             for GO; exit, or allocate MORE (must succeed),
 *                             write READY.more and wait to be killed
 *   hold-refused BYTES READY GO MORE  the same, but allocating MORE must be
 *                             refused (OUT_OF_MEMORY)
 *   hold-fork BYTES READY     allocate BYTES, fork a child that allocates
 *                             BYTES too and waits forever; write READY
 *                             ("PARENT CHILD"), wait forever
 *   fork-after-mediator-gone READY GO  allocate, write READY, wait for GO
 *                             (the mediator is killed meanwhile), then fork
 *                             a child whose allocation must be refused: it
 *                             cannot rejoin, so it has no quota to count in
 *   kill-time PID VGPU DEV BYTES  kill -9 PID, then time until vGPU VGPU's
 *                             use on DEV (read raw from the window this
 *                             process is given, as a member of VGPU) is
 *                             BYTES: at most 100 ms
 *   expect-quota-refusal BYTES  a new context, or else allocating BYTES,
 *                             is refused
 *   hold-bypass BYTES AROUND READY GO  allocate BYTES through vgpu, then
 *                             AROUND from the fake driver directly (as a
 *                             program that goes around vgpu's hooks), write
 *                             READY (our pid), and wait for GO (or a kill)
 */
#define _GNU_SOURCE
#include "test/common/client_util.h"
#include "common/contract/window/bar0.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

static void start(void)
{
    CU(F(cuInit)(0));
    CUdevice dev = -1;
    CUcontext ctx = NULL;
    CU(F(cuDeviceGet)(&dev, 0));
    CU(F(cuDevicePrimaryCtxRetain)(&ctx, dev));
    CU(F(cuCtxSetCurrent)(ctx));
}

static void scenario_admitted(const char *quota_text)
{
    uint64_t quota = parse_size(quota_text);
    start();
    size_t total = 0, free_bytes = 0;
    CU(F(cuDeviceTotalMem_v2)(&total, 0));
    CHECK(total == quota, "cuDeviceTotalMem_v2 %zu, want the vGPU's quota %llu", total, (unsigned long long)quota);
    CU(F(cuMemGetInfo_v2)(&free_bytes, &total));
    CHECK(total == quota && free_bytes < quota, "cuMemGetInfo_v2 free %zu total %zu, want total %llu", free_bytes,
          total, (unsigned long long)quota);
    NV(N(nvmlInit_v2)());
    nvmlDevice_t h;
    nvmlMemory_t mem;
    NV(N(nvmlDeviceGetHandleByIndex_v2)(0, &h));
    NV(N(nvmlDeviceGetMemoryInfo)(h, &mem));
    CHECK(mem.total == quota, "NVML total %llu, want %llu", mem.total, (unsigned long long)quota);
    CUdeviceptr p = 0;
    CUresult r = F(cuMemAlloc_v2)(&p, free_bytes + MiB);
    CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "an allocation past the quota returned %d", (int)r);
    CU(F(cuMemAlloc_v2)(&p, free_bytes / 2));
    CU(F(cuMemFree_v2)(p));
}

static void scenario_refused(void)
{
    CUresult r = F(cuInit)(0);
    CHECK(r == CUDA_ERROR_NO_DEVICE, "cuInit returned %d, want CUDA_ERROR_NO_DEVICE", (int)r);
    unsigned n = 99;
    NV(N(nvmlInit_v2)());
    NV(N(nvmlDeviceGetCount_v2)(&n));
    CHECK(n == 0, "NVML shows %u devices, want 0", n);
}

static void signal_pid(const char *path, const char *extra)
{
    char text[64];
    snprintf(text, sizeof(text), "%d%s\n", (int)getpid(), extra);
    signal_file(path, text);
}

static void scenario_hold(int argc, char **argv, bool more_refused)
{
    start();
    CUdeviceptr p = 0, q = 0;
    CU(F(cuMemAlloc_v2)(&p, parse_size(argv[2])));
    signal_pid(argv[3], "");
    CHECK(wait_file(argv[4], 120) == 0, "no %s within 120 s", argv[4]);
    if (argc > 5) {
        char more[PATH_MAX];
        CUresult r = F(cuMemAlloc_v2)(&q, parse_size(argv[5]));
        if (more_refused)
            CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "allocating %s more returned %d, want CUDA_ERROR_OUT_OF_MEMORY",
                  argv[5], (int)r);
        else
            CU(r);
        if (atomic_load(&failures))
            exit(1);
        snprintf(more, sizeof(more), "%s.more", argv[3]);
        signal_pid(more, "");
        pause(); /* until killed */
    }
}

static void scenario_hold_fork(int argc, char **argv)
{
    (void)argc;
    start();
    CUdeviceptr p = 0;
    uint64_t bytes = parse_size(argv[2]);
    CU(F(cuMemAlloc_v2)(&p, bytes));
    int pipefd[2];
    CHECK(pipe(pipefd) == 0, "pipe");
    pid_t child = fork();
    if (child == 0) {
        /* The child counts on its own slot, its own connection. */
        CUdeviceptr c = 0;
        CU(F(cuMemAlloc_v2)(&c, bytes));
        char ok = atomic_load(&failures) ? 'n' : 'y';
        CHECK(write(pipefd[1], &ok, 1) == 1, "write");
        sleep(120); /* killed by the test before; a test that failed early leaves no child for long */
        _exit(0);
    }
    char ok = 'n';
    CHECK(read(pipefd[0], &ok, 1) == 1 && ok == 'y', "the child could not allocate");
    char extra[32];
    snprintf(extra, sizeof(extra), " %d", (int)child);
    signal_pid(argv[3], extra);
    pause();
}

static void scenario_fork_after_mediator_gone(char **argv)
{
    start();
    CUdeviceptr p = 0;
    CU(F(cuMemAlloc_v2)(&p, 64 * MiB));
    signal_pid(argv[2], "");
    CHECK(wait_file(argv[3], 60) == 0, "no %s within 60 s", argv[3]);
    int pipefd[2];
    CHECK(pipe(pipefd) == 0, "pipe");
    pid_t child = fork();
    if (child == 0) {
        /* Fail closed: a child that cannot take a slot of its own must not
         * allocate unbounded. */
        CUdeviceptr c = 0;
        CUresult r = F(cuMemAlloc_v2)(&c, MiB);
        char verdict = r == CUDA_ERROR_OUT_OF_MEMORY ? 'y' : 'n';
        if (verdict == 'n')
            fprintf(stderr, "FAIL child: with the mediator gone, cuMemAlloc_v2 returned %d\n", (int)r);
        _exit(write(pipefd[1], &verdict, 1) == 1 ? 0 : 2);
    }
    close(pipefd[1]);
    char verdict = 'n';
    CHECK(read(pipefd[0], &verdict, 1) == 1 && verdict == 'y', "the child was not refused (above)");
    waitpid(child, NULL, 0);
}

/* The status part of vGPU name's window as this process maps it (vgpu maps
 * it on joining; the mediator names its memfd "vgpu:NAME:status"), or NULL. */
static const struct vgpu_bar0_status *own_status(const char *name)
{
    char want[96], line[4096];
    snprintf(want, sizeof(want), "/memfd:vgpu:%s:status", name);
    FILE *maps = fopen("/proc/self/maps", "re");
    const struct vgpu_bar0_status *st = NULL;
    while (maps && !st && fgets(line, sizeof(line), maps)) {
        unsigned long start;
        char path[4096] = "";
        if (sscanf(line, "%lx-%*x %*s %*s %*s %*s %4095s", &start, path) == 2 && strcmp(path, want) == 0)
            st = (const struct vgpu_bar0_status *)start;
    }
    if (maps)
        fclose(maps);
    return st;
}

static void scenario_kill_time(char **argv)
{
    pid_t pid = atoi(argv[2]);
    int dev = atoi(argv[4]);
    uint64_t want = strtoull(argv[5], NULL, 10);
    if (pid <= 1 || dev < 0 || dev >= VGPU_MAX_DEVICES) { /* kill(0) would be our own group */
        CHECK(0, "kill-time: no such process %s or device %s", argv[2], argv[4]);
        return;
    }
    /* Joining the vGPU maps its window: the use is read there, raw. */
    setenv("VGPU_NAME", argv[3], 1);
    CU(F(cuInit)(0));
    const struct vgpu_bar0_status *st = own_status(argv[3]);
    CHECK(st, "this process maps no window of vGPU %s (is it admitted to it?)", argv[3]);
    if (!st)
        return;
    uint64_t before = atomic_load(&st->device[dev].memory_used);
    CHECK(before > want, "the vGPU uses %llu before the kill, no more than the %llu it should come back to",
          (unsigned long long)before, (unsigned long long)want);
    double t0 = now_s(), seen = -1;
    CHECK(kill(pid, SIGKILL) == 0, "kill %d", (int)pid);
    while (now_s() - t0 < 5) {
        if (atomic_load(&st->device[dev].memory_used) == want) {
            seen = now_s() - t0;
            break;
        }
        usleep(200);
    }
    printf("use %llu -> %llu after %.1f ms\n", (unsigned long long)before,
           (unsigned long long)atomic_load(&st->device[dev].memory_used), seen * 1e3);
    CHECK(seen >= 0 && seen <= 0.100, "the killed process's memory came back after %.1f ms (want <= 100 ms; use is "
          "%llu, want %llu)", seen * 1e3, (unsigned long long)atomic_load(&st->device[dev].memory_used),
          (unsigned long long)want);
}

/* On a vGPU that has no room: refused at the context (its overhead is
 * memory too) or, with room for a context, at the allocation. */
static void scenario_expect_refusal(const char *bytes)
{
    CU(F(cuInit)(0));
    CUdevice dev = -1;
    CUcontext ctx = NULL;
    CU(F(cuDeviceGet)(&dev, 0));
    CUresult r = F(cuDevicePrimaryCtxRetain)(&ctx, dev);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        printf("the context was refused\n");
        return;
    }
    CU(r);
    CU(F(cuCtxSetCurrent)(ctx));
    CUdeviceptr p = 0;
    r = F(cuMemAlloc_v2)(&p, parse_size(bytes));
    CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "allocating %s returned %d, want CUDA_ERROR_OUT_OF_MEMORY", bytes, (int)r);
}

/* What vgpu never sees: the fake driver's own cuMemAlloc_v2 (found with
 * dlmopen: vgpu answers dlopen of the driver with itself). */
static void scenario_hold_bypass(char **argv)
{
    start();
    CUdeviceptr p = 0, q = 0;
    CU(F(cuMemAlloc_v2)(&p, parse_size(argv[2])));
    const char *path = getenv("TEST_FAKE_LIBCUDA");
    void *fake = path ? dlmopen(LM_ID_BASE, path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    __typeof__(&cuMemAlloc_v2) around = fake ? (__typeof__(&cuMemAlloc_v2))dlsym(fake, "cuMemAlloc_v2") : NULL;
    CHECK(around, "the fake driver (TEST_FAKE_LIBCUDA=%s) is not loaded", path ? path : "");
    if (around)
        CU(around(&q, parse_size(argv[3])));
    if (atomic_load(&failures))
        exit(1);
    signal_pid(argv[4], "");
    CHECK(wait_file(argv[5], 120) == 0, "no %s within 120 s", argv[5]);
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (strcmp(s, "admitted") == 0 && argc == 3)
        scenario_admitted(argv[2]);
    else if (strcmp(s, "refused") == 0)
        scenario_refused();
    else if (strcmp(s, "hold") == 0 && (argc == 5 || argc == 6))
        scenario_hold(argc, argv, false);
    else if (strcmp(s, "hold-refused") == 0 && argc == 6)
        scenario_hold(argc, argv, true);
    else if (strcmp(s, "fork-after-mediator-gone") == 0 && argc == 4)
        scenario_fork_after_mediator_gone(argv);
    else if (strcmp(s, "hold-fork") == 0 && argc == 4)
        scenario_hold_fork(argc, argv);
    else if (strcmp(s, "kill-time") == 0 && argc == 6)
        scenario_kill_time(argv);
    else if (strcmp(s, "expect-quota-refusal") == 0 && argc == 3)
        scenario_expect_refusal(argv[2]);
    else if (strcmp(s, "hold-bypass") == 0 && argc == 6)
        scenario_hold_bypass(argv);
    else {
        fprintf(stderr, "usage: mediator_client admitted QUOTA | refused | hold BYTES READY GO [MORE] | hold-refused "
                        "BYTES READY GO MORE | hold-fork BYTES READY | kill-time PID VGPU DEV BYTES | "
                        "expect-quota-refusal BYTES | hold-bypass BYTES AROUND READY GO\n");
        return 2;
    }
    if (atomic_load(&failures)) {
        fprintf(stderr, "mediator_client %s (pid %d): %d check(s) failed\n", s, (int)getpid(),
                atomic_load(&failures));
        return 1;
    }
    printf("ok - %s\n", s);
    return 0;
}
