/*
 * What NVML shows a process of a vGPU, asked as nvidia-smi and pynvml ask
 * (test/nvml/nvml.sh runs it under vgpu over the fake driver):
 *
 *   util LO HI          nvmlDeviceGetUtilizationRates of device 0: gpu within LO..HI percent
 *   proc-util [PID...]  both per-process utilization queries list exactly these pids,
 *                       by NVML's size protocol
 *   procs [PID...]      compute, graphics and MPS process lists (every version) are exactly these pids
 *   compute-procs [PID...]  the compute process lists alone (the fake's own lists, which the
 *                       graphics and MPS lists filter, hold one PID namespace's processes only)
 *   topology            (4 fake GPUs, the vGPU's are 1 and 2) topology and P2P answers within the vGPU
 *   foreign-handle      a handle of a GPU outside the vGPU is refused by every query that takes one
 */
#define _GNU_SOURCE
#include "test/common/client_util.h"

#include <stdbool.h>

static nvmlDevice_t dev_at(unsigned index)
{
    static bool initialised;
    if (!initialised)
        NV(N(nvmlInit_v2)());
    initialised = true;
    nvmlDevice_t d = NULL;
    NV(N(nvmlDeviceGetHandleByIndex_v2)(index, &d));
    return d;
}

static void scenario_util(int lo, int hi)
{
    nvmlUtilization_t u = { 0, 0 };
    NV(N(nvmlDeviceGetUtilizationRates)(dev_at(0), &u));
    printf("nvmlDeviceGetUtilizationRates: gpu %u%% memory %u%%\n", u.gpu, u.memory);
    CHECK((int)u.gpu >= lo && (int)u.gpu <= hi, "utilization %u%%, want %d..%d", u.gpu, lo, hi);
}

/* pids[0..n) and want[0..nwant) hold the same pids, each once. */
static void same_pids(const char *what, const unsigned *pids, unsigned n, char **want, int nwant)
{
    CHECK(n == (unsigned)nwant, "%s: %u entries, want %d", what, n, nwant);
    for (unsigned k = 0; k < n; k++) {
        int hits = 0;
        for (int w = 0; w < nwant; w++)
            hits += (unsigned)atoi(want[w]) == pids[k];
        for (unsigned j = 0; j < k; j++)
            hits += pids[j] == pids[k] ? 2 : 0;
        CHECK(hits == 1, "%s: pid %u is %s", what, pids[k], hits ? "listed twice" : "not one of the vGPU's");
    }
}

static void scenario_proc_util(char **want, int nwant)
{
    nvmlDevice_t dev = dev_at(0);
    unsigned want_n = (unsigned)nwant, n = 0, pids[256];
    nvmlReturn_t none = want_n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_ERROR_NOT_FOUND;

    /* nvmlDeviceGetProcessUtilization, as pynvml calls it: sized with NULL, then filled. */
    nvmlReturn_t r = N(nvmlDeviceGetProcessUtilization)(dev, NULL, &n, 0);
    CHECK(r == none && n == want_n, "nvmlDeviceGetProcessUtilization(NULL): %d with %u samples, want %d with %u",
          (int)r, n, (int)none, want_n);
    nvmlProcessUtilizationSample_t samples[256];
    if (want_n > 1) {
        n = want_n - 1;
        r = N(nvmlDeviceGetProcessUtilization)(dev, samples, &n, 0);
        CHECK(r == NVML_ERROR_INSUFFICIENT_SIZE && n == want_n,
              "nvmlDeviceGetProcessUtilization with room for %u: %d with %u samples", want_n - 1, (int)r, n);
    }
    n = 256;
    r = N(nvmlDeviceGetProcessUtilization)(dev, samples, &n, 0);
    CHECK(r == (want_n ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND), "nvmlDeviceGetProcessUtilization: %d", (int)r);
    for (unsigned k = 0; r == NVML_SUCCESS && k < n; k++)
        pids[k] = samples[k].pid;
    same_pids("nvmlDeviceGetProcessUtilization", pids, r == NVML_SUCCESS ? n : 0, want, nwant);

    /* nvmlDeviceGetProcessesUtilizationInfo, the same way. */
    nvmlProcessesUtilizationInfo_t info = { .version = nvmlProcessesUtilizationInfo_v1 };
    r = N(nvmlDeviceGetProcessesUtilizationInfo)(dev, &info);
    CHECK(r == none && info.processSamplesCount == want_n,
          "nvmlDeviceGetProcessesUtilizationInfo(NULL): %d with %u samples, want %d with %u", (int)r,
          info.processSamplesCount, (int)none, want_n);
    nvmlProcessUtilizationInfo_v1_t infos[256];
    info = (nvmlProcessesUtilizationInfo_t){ .version = nvmlProcessesUtilizationInfo_v1, .processSamplesCount = 256,
                                             .procUtilArray = infos };
    r = N(nvmlDeviceGetProcessesUtilizationInfo)(dev, &info);
    CHECK(r == (want_n ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND), "nvmlDeviceGetProcessesUtilizationInfo: %d", (int)r);
    for (unsigned k = 0; r == NVML_SUCCESS && k < info.processSamplesCount; k++)
        pids[k] = infos[k].pid;
    same_pids("nvmlDeviceGetProcessesUtilizationInfo", pids, r == NVML_SUCCESS ? info.processSamplesCount : 0, want,
              nwant);

    /* Nothing newer than a time to come. */
    n = 256;
    r = N(nvmlDeviceGetProcessUtilization)(dev, samples, &n, ~0ull >> 1);
    CHECK(r == NVML_ERROR_NOT_FOUND, "nvmlDeviceGetProcessUtilization since a time to come: %d, %u samples", (int)r,
          n);
}

typedef nvmlReturn_t (*list_fn)(nvmlDevice_t, unsigned int *, void *);

static void check_list(const char *name, list_fn fn, int version, char **want, int nwant)
{
    nvmlDevice_t dev = dev_at(0);
    unsigned n = 0, want_n = (unsigned)nwant, pids[256];
    nvmlReturn_t r = fn(dev, &n, NULL);
    CHECK(r == (want_n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS) && n == want_n,
          "%s sizing call: %d with count %u, want %u", name, (int)r, n, want_n);
    nvmlProcessInfo_t list[256];
    nvmlProcessInfo_v1_t list1[256];
    n = 256;
    r = fn(dev, &n, version == 1 ? (void *)list1 : (void *)list);
    CHECK(r == NVML_SUCCESS, "%s: %d", name, (int)r);
    for (unsigned k = 0; r == NVML_SUCCESS && k < n; k++)
        pids[k] = version == 1 ? list1[k].pid : list[k].pid;
    same_pids(name, pids, r == NVML_SUCCESS ? n : 0, want, nwant);
}

static void scenario_procs(char **want, int nwant, bool compute_only)
{
#define LIST(name, version) check_list(#name, (list_fn)N(name), version, want, nwant)
    LIST(nvmlDeviceGetComputeRunningProcesses, 1);
    LIST(nvmlDeviceGetComputeRunningProcesses_v2, 2);
    LIST(nvmlDeviceGetComputeRunningProcesses_v3, 3);
    if (compute_only)
        return;
    LIST(nvmlDeviceGetGraphicsRunningProcesses, 1);
    LIST(nvmlDeviceGetGraphicsRunningProcesses_v2, 2);
    LIST(nvmlDeviceGetGraphicsRunningProcesses_v3, 3);
    LIST(nvmlDeviceGetMPSComputeRunningProcesses, 1);
    LIST(nvmlDeviceGetMPSComputeRunningProcesses_v2, 2);
    LIST(nvmlDeviceGetMPSComputeRunningProcesses_v3, 3);
#undef LIST
}

/* The fake's own handle of its device i: the driver behind vgpu, as a
 * process that kept a handle from elsewhere would hold it. */
static nvmlDevice_t physical_handle(unsigned i)
{
    const char *path = getenv("TEST_FAKE_NVML");
    void *h = path ? dlmopen(LM_ID_BASE, path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    CHECK(h != NULL, "the fake NVML %s is not loaded", path ? path : "(TEST_FAKE_NVML unset)");
    if (!h)
        exit(1);
    nvmlDevice_t d = NULL;
    CHECK(((__typeof__(&nvmlDeviceGetHandleByIndex_v2))dlsym(h, "nvmlDeviceGetHandleByIndex_v2"))(i, &d) ==
              NVML_SUCCESS, "the fake has no device %u", i);
    return d;
}

static unsigned pci_bus(nvmlDevice_t d)
{
    nvmlPciInfo_t pci;
    NV(N(nvmlDeviceGetPciInfo_v3)(d, &pci));
    return pci.bus;
}

static void scenario_topology(void)
{
    nvmlDevice_t d0 = dev_at(0), d1 = dev_at(1);
    CHECK(d0 == physical_handle(1) && d1 == physical_handle(2), "the vGPU's devices are not GPUs 1 and 2");
    unsigned n = 0;
    nvmlDevice_t found[8];
    /* GPU 1's peer behind its switch is GPU 0, outside the vGPU. */
    NV(N(nvmlDeviceGetTopologyNearestGpus)(d0, NVML_TOPOLOGY_SINGLE, &n, NULL));
    CHECK(n == 0, "nearest GPUs of device 0 on its switch: %u, want none (GPU 0 is not the vGPU's)", n);
    n = 0;
    NV(N(nvmlDeviceGetTopologyNearestGpus)(d0, NVML_TOPOLOGY_SYSTEM, &n, NULL));
    CHECK(n == 1, "nearest GPUs of device 0 in the system: %u, want 1 (the vGPU's device 1)", n);
    n = 8;
    NV(N(nvmlDeviceGetTopologyNearestGpus)(d0, NVML_TOPOLOGY_SYSTEM, &n, found));
    CHECK(n == 1 && found[0] == d1, "nearest GPUs of device 0: %u, the first %p, want device 1 (%p)", n,
          n ? (void *)found[0] : NULL, (void *)d1);
    n = 0;
    NV(N(nvmlSystemGetTopologyGpuSet)(0, &n, NULL));
    CHECK(n == 2, "CPU 0's GPUs: %u, want the vGPU's 2", n);
    n = 1;
    nvmlReturn_t r = N(nvmlSystemGetTopologyGpuSet)(0, &n, found);
    CHECK(r == NVML_ERROR_INSUFFICIENT_SIZE && n == 2, "CPU 0's GPUs with room for 1: %d, count %u", (int)r, n);
    n = 8;
    NV(N(nvmlSystemGetTopologyGpuSet)(0, &n, found));
    CHECK(n == 2 && found[0] == d0 && found[1] == d1, "CPU 0's GPUs: %u, want the vGPU's devices 0 and 1", n);

    nvmlGpuP2PStatus_t p2p = NVML_P2P_STATUS_UNKNOWN;
    NV(N(nvmlDeviceGetP2PStatus)(d0, d1, NVML_P2P_CAPS_INDEX_READ, &p2p));
    CHECK(p2p == NVML_P2P_STATUS_OK, "P2P read between the vGPU's devices: %d, want OK", (int)p2p);
    nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_INTERNAL;
    NV(N(nvmlDeviceGetTopologyCommonAncestor)(d0, d1, &level));
    CHECK(level == NVML_TOPOLOGY_HOSTBRIDGE, "common ancestor of devices 0 and 1: %d, want the host bridge",
          (int)level);
    /* Link 0 of GPU 1 reaches GPU 0: an address, never a handle. */
    nvmlPciInfo_t pci;
    NV(N(nvmlDeviceGetNvLinkRemotePciInfo_v2)(d0, 0, &pci));
    CHECK(pci.bus == pci_bus(physical_handle(0)), "NVLink 0 of device 0 reaches bus %u", pci.bus);
    nvmlDevice_t peer = NULL;
    r = N(nvmlDeviceGetHandleByPciBusId_v2)(pci.busId, &peer);
    CHECK(r == NVML_ERROR_NOT_FOUND, "the NVLink peer %s outside the vGPU looked up: %d, want NOT_FOUND", pci.busId,
          (int)r);
    unsigned minor = 0;
    NV(N(nvmlDeviceGetMinorNumber)(d1, &minor));
    CHECK(minor == 2, "device 1's minor number: %u, want 2 (/dev/nvidia2, the GPU's own device file)", minor);
}

static void scenario_foreign_handle(void)
{
    nvmlDevice_t mine = dev_at(0), other = physical_handle(0);
    unsigned n = 8, minor, u;
    nvmlDevice_t found[8];
    nvmlGpuP2PStatus_t p2p;
    nvmlGpuTopologyLevel_t level;
    nvmlPciInfo_t pci;
    nvmlUtilization_t util;
    nvmlProcessInfo_t procs[8];
#define REFUSED(call)                                                                                        \
    do {                                                                                                     \
        nvmlReturn_t r_ = (call);                                                                            \
        CHECK(r_ == NVML_ERROR_INVALID_ARGUMENT, "%s with GPU 0's handle: %d, want INVALID_ARGUMENT", #call, \
              (int)r_);                                                                                      \
    } while (0)
    REFUSED(N(nvmlDeviceGetP2PStatus)(mine, other, NVML_P2P_CAPS_INDEX_READ, &p2p));
    REFUSED(N(nvmlDeviceGetP2PStatus)(other, mine, NVML_P2P_CAPS_INDEX_READ, &p2p));
    REFUSED(N(nvmlDeviceGetTopologyCommonAncestor)(mine, other, &level));
    REFUSED(N(nvmlDeviceGetTopologyNearestGpus)(other, NVML_TOPOLOGY_SYSTEM, &n, found));
    REFUSED(N(nvmlDeviceGetNvLinkRemotePciInfo_v2)(other, 0, &pci));
    REFUSED(N(nvmlDeviceGetMinorNumber)(other, &minor));
    REFUSED(N(nvmlDeviceGetIndex)(other, &u));
    REFUSED(N(nvmlDeviceGetUtilizationRates)(other, &util));
    n = 8;
    REFUSED(N(nvmlDeviceGetComputeRunningProcesses_v3)(other, &n, procs));
    n = 8;
    REFUSED(N(nvmlDeviceGetGraphicsRunningProcesses_v3)(other, &n, procs));
#undef REFUSED
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (strcmp(s, "util") == 0 && argc == 4)
        scenario_util(atoi(argv[2]), atoi(argv[3]));
    else if (strcmp(s, "proc-util") == 0)
        scenario_proc_util(argv + 2, argc - 2);
    else if (strcmp(s, "procs") == 0)
        scenario_procs(argv + 2, argc - 2, false);
    else if (strcmp(s, "compute-procs") == 0)
        scenario_procs(argv + 2, argc - 2, true);
    else if (strcmp(s, "topology") == 0)
        scenario_topology();
    else if (strcmp(s, "foreign-handle") == 0)
        scenario_foreign_handle();
    else {
        fprintf(stderr, "usage: nvml_client util LO HI | proc-util [PID...] | procs [PID...] | compute-procs [PID...] | "
                        "topology | "
                        "foreign-handle\n");
        return 2;
    }
    if (atomic_load(&failures)) {
        fprintf(stderr, "nvml_client %s (pid %d): %d check(s) failed\n", s, (int)getpid(), atomic_load(&failures));
        return 1;
    }
    printf("ok - %s\n", s);
    return 0;
}
