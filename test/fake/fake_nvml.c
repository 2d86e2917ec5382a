/*
 * Fake libnvidia-ml.so.1: the devices of gpu/, seen through NVML.
 * Memory "used" is what every process sharing FAKEGPU_STATE holds, and
 * utilization the device time they used in the last second, as the real
 * NVML reports them.  Prototypes come from include/vgpu/nvml_abi.h.
 */
#define _GNU_SOURCE
#include "test/fake/gpu/busy.h"
#include "test/fake/gpu/fakegpu.h"
#include "vgpu/nvml_abi.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct nvmlDevice_st {
    int index;
};

static struct nvmlDevice_st devices[FAKEGPU_MAX_DEVICES];
static int init_count; /* nvmlInit/nvmlShutdown nesting, under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long calls;

/* How many NVML calls this process made (the tests' probe, found by dlsym). */
unsigned long fakenvml_calls(void);
unsigned long fakenvml_calls(void)
{
    return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}

static void count_call(void)
{
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
}

static int initialised(void)
{
    pthread_mutex_lock(&lock);
    int n = init_count;
    pthread_mutex_unlock(&lock);
    return n > 0;
}

/* Entry checks shared by every device query. */
static nvmlReturn_t check_device(nvmlDevice_t dev)
{
    count_call();
    if (!initialised())
        return NVML_ERROR_UNINITIALIZED;
    if (!dev || dev < devices || dev >= devices + fakegpu_config()->devices)
        return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

/* The real NVML (r580) starts a helper thread of its own on its first
 * init, from the calling thread and so with its signal mask: a process
 * that blocks signals later, for a signalfd, leaves that thread able to
 * take them.  FAKENVML_INIT_THREAD=1 does the same, for the mediator's test. */
static void *helper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static void start_helper(void)
{
    const char *want = getenv("FAKENVML_INIT_THREAD");
    pthread_t t;
    if (want && strcmp(want, "1") == 0 && pthread_create(&t, NULL, helper, NULL) == 0)
        pthread_detach(t);
}

static nvmlReturn_t init(void)
{
    static pthread_once_t helper_once = PTHREAD_ONCE_INIT;
    pthread_once(&helper_once, start_helper);
    count_call();
    pthread_mutex_lock(&lock);
    for (int i = 0; i < FAKEGPU_MAX_DEVICES; i++)
        devices[i].index = i;
    init_count++;
    pthread_mutex_unlock(&lock);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void)
{
    return init();
}

nvmlReturn_t nvmlInit_v2(void)
{
    return init();
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags;
    return init();
}

nvmlReturn_t nvmlShutdown(void)
{
    count_call();
    pthread_mutex_lock(&lock);
    nvmlReturn_t r = init_count > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
    if (init_count > 0)
        init_count--;
    pthread_mutex_unlock(&lock);
    return r;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    count_call();
    switch (result) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return "Argument Version Mismatch";
    default:
        return "Unknown Error";
    }
}

static nvmlReturn_t copy_string(char *dst, unsigned int len, const char *src)
{
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(dst, src, strlen(src) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    count_call();
    return initialised() ? copy_string(version, length, "580.00.fake") : NVML_ERROR_UNINITIALIZED;
}

static nvmlReturn_t cuda_version(int *v)
{
    count_call();
    if (!v)
        return NVML_ERROR_INVALID_ARGUMENT;
    *v = FAKEGPU_CUDA_VERSION;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
    return cuda_version(v);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    return cuda_version(v);
}

static nvmlReturn_t count(unsigned int *n)
{
    count_call();
    if (!initialised())
        return NVML_ERROR_UNINITIALIZED;
    if (!n)
        return NVML_ERROR_INVALID_ARGUMENT;
    *n = (unsigned)fakegpu_config()->devices;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *n)
{
    return count(n);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    return count(n);
}

/* Handle lookup without counting the call (callers count it once). */
static nvmlReturn_t lookup(int index, nvmlDevice_t *dev)
{
    if (!initialised())
        return NVML_ERROR_UNINITIALIZED;
    if (!dev || index < 0 || index >= fakegpu_config()->devices)
        return NVML_ERROR_INVALID_ARGUMENT;
    *dev = &devices[index];
    return NVML_SUCCESS;
}

static nvmlReturn_t by_index(int index, nvmlDevice_t *dev)
{
    count_call();
    return lookup(index, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *dev)
{
    return by_index((int)index, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev)
{
    return by_index((int)index, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev)
{
    char s[48];
    count_call();
    for (int i = 0; uuid && i < fakegpu_config()->devices; i++) {
        fakegpu_device_uuid_string(i, s);
        if (strcmp(s, uuid) == 0)
            return lookup(i, dev);
    }
    return initialised() ? NVML_ERROR_NOT_FOUND : NVML_ERROR_UNINITIALIZED;
}

static nvmlReturn_t by_pci(const char *bus_id, nvmlDevice_t *dev)
{
    count_call();
    int i = bus_id ? fakegpu_device_from_pci_bus_id(bus_id) : -1;
    if (i >= 0)
        return lookup(i, dev);
    return initialised() ? NVML_ERROR_NOT_FOUND : NVML_ERROR_UNINITIALIZED;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus_id, nvmlDevice_t *dev)
{
    return by_pci(bus_id, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *dev)
{
    return by_pci(bus_id, dev);
}

static nvmlReturn_t index_of(nvmlDevice_t dev, unsigned int *index)
{
    nvmlReturn_t r = check_device(dev);
    if (r == NVML_SUCCESS && !index)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        *index = (unsigned)dev->index;
    return r;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int *index)
{
    return index_of(dev, index);
}

/* Not through nvmlDeviceGetIndex: under vgpu that name is vgpu's, which
 * renumbers the device. */
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned int *minor)
{
    return index_of(dev, minor);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length)
{
    nvmlReturn_t r = check_device(dev);
    char s[32];
    snprintf(s, sizeof(s), "Fake GPU %d", r == NVML_SUCCESS ? dev->index : 0);
    return r == NVML_SUCCESS ? copy_string(name, length, s) : r;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int length)
{
    nvmlReturn_t r = check_device(dev);
    char s[48];
    if (r != NVML_SUCCESS)
        return r;
    fakegpu_device_uuid_string(dev->index, s);
    return copy_string(uuid, length, s);
}

static nvmlReturn_t pci_info(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    nvmlReturn_t r = check_device(dev);
    if (r == NVML_SUCCESS && !pci)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r != NVML_SUCCESS)
        return r;
    memset(pci, 0, sizeof(*pci));
    pci->bus = fakegpu_device_pci_bus(dev->index);
    snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT, 0u, pci->bus, 0u);
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT, 0u, pci->bus, 0u);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    return pci_info(dev, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    return pci_info(dev, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    return pci_info(dev, pci);
}

static void memory_of(int dev, unsigned long long *total, unsigned long long *free_b, unsigned long long *used)
{
    *total = fakegpu_config()->memory;
    *used = fakegpu_state_device_used(dev);
    *free_b = *used < *total ? *total - *used : 0;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m)
{
    nvmlReturn_t r = check_device(dev);
    if (r == NVML_SUCCESS && !m)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        memory_of(dev->index, &m->total, &m->free, &m->used);
    return r;
}

/* Field values: each field's id times 10 plus the device's index, as an
 * unsigned long long, at a fixed time; field 0 is not supported. */
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t dev, int count, nvmlFieldValue_t *values)
{
    nvmlReturn_t r = check_device(dev);
    if (r == NVML_SUCCESS && (count <= 0 || !values))
        r = NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; r == NVML_SUCCESS && i < count; i++) {
        nvmlFieldValue_t *v = &values[i];
        v->timestamp = 1700000000000000LL;
        v->latencyUsec = 0;
        v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        v->nvmlReturn = v->fieldId ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
        v->value.ullVal = (unsigned long long)v->fieldId * 10 + dev->index;
    }
    return r;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m)
{
    nvmlReturn_t r = check_device(dev);
    if (r == NVML_SUCCESS && !m)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && m->version != nvmlMemory_v2)
        r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (r == NVML_SUCCESS) {
        m->reserved = 0;
        memory_of(dev->index, &m->total, &m->free, &m->used);
    }
    return r;
}

/* NVML's size protocol: *count in = capacity, out = how many there are. */
static nvmlReturn_t processes(nvmlDevice_t dev, unsigned int *count, void *infos, size_t stride, int v1)
{
    nvmlReturn_t r = check_device(dev);
    if (r == NVML_SUCCESS && (!count || (*count && !infos)))
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r != NVML_SUCCESS)
        return r;
    struct fakegpu_proc_figure usage[FAKEGPU_MAX_PROCS];
    unsigned n = fakegpu_state_processes(dev->index, usage, FAKEGPU_MAX_PROCS);
    if (n > *count) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; i++) {
        char *slot = (char *)infos + i * stride;
        if (v1) {
            nvmlProcessInfo_v1_t p = { (unsigned)usage[i].pid, usage[i].value };
            memcpy(slot, &p, sizeof(p));
        } else {
            nvmlProcessInfo_t p = { .pid = (unsigned)usage[i].pid, .usedGpuMemory = usage[i].value,
                                    .gpuInstanceId = 0xFFFFFFFF, .computeInstanceId = 0xFFFFFFFF };
            memcpy(slot, &p, sizeof(p));
        }
    }
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_v1_t *infos)
{
    return processes(dev, count, infos, sizeof(*infos), 1);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t dev, unsigned int *count,
                                                     nvmlProcessInfo_v2_t *infos)
{
    return processes(dev, count, infos, sizeof(*infos), 0);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_t *infos)
{
    return processes(dev, count, infos, sizeof(*infos), 0);
}

/* The fake cannot tell graphics or MPS clients from compute ones: every
 * process with memory on the device is in each list. */
#define PROCESS_LIST(name, info_t, v1)                                                 \
    nvmlReturn_t name(nvmlDevice_t dev, unsigned int *count, info_t *infos)            \
    {                                                                                  \
        return processes(dev, count, infos, sizeof(*infos), v1);                       \
    }
PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses, nvmlProcessInfo_v1_t, 1)
PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses_v2, nvmlProcessInfo_v2_t, 0)
PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses_v3, nvmlProcessInfo_t, 0)
PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses, nvmlProcessInfo_v1_t, 1)
PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses_v2, nvmlProcessInfo_v2_t, 0)
PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses_v3, nvmlProcessInfo_t, 0)

/* ---- topology: devices in pairs behind a PCIe switch (0 and 1, 2 and 3, ...), linked by NVLink ---- */

static nvmlGpuTopologyLevel_t distance(int a, int b)
{
    return a == b ? NVML_TOPOLOGY_INTERNAL : a / 2 == b / 2 ? NVML_TOPOLOGY_SINGLE : NVML_TOPOLOGY_HOSTBRIDGE;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t d1, nvmlDevice_t d2, nvmlGpuTopologyLevel_t *path)
{
    nvmlReturn_t r = check_device(d1);
    if (r == NVML_SUCCESS)
        r = check_device(d2);
    if (r == NVML_SUCCESS && !path)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        *path = distance(d1->index, d2->index);
    return r;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t d1, nvmlDevice_t d2, nvmlGpuP2PCapsIndex_t caps,
                                    nvmlGpuP2PStatus_t *status)
{
    nvmlReturn_t r = check_device(d1);
    if (r == NVML_SUCCESS)
        r = check_device(d2);
    if (r == NVML_SUCCESS && (!status || caps >= NVML_P2P_CAPS_INDEX_UNKNOWN))
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        *status = d1 == d2 ? NVML_P2P_STATUS_NOT_SUPPORTED : NVML_P2P_STATUS_OK;
    return r;
}

/* The devices within level of near (every one when near < 0), by NVML's
 * size protocol: *count 0 or no array asks how many. */
static nvmlReturn_t device_list(int near, nvmlGpuTopologyLevel_t level, unsigned *count, nvmlDevice_t *out)
{
    unsigned n = 0, room = out ? *count : 0;
    for (int i = 0; i < fakegpu_config()->devices; i++) {
        if (near >= 0 && (i == near || distance(near, i) > level))
            continue;
        if (n < room)
            out[n] = &devices[i];
        n++;
    }
    nvmlReturn_t r = room && room < n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    *count = n;
    return r;
}

nvmlReturn_t nvmlDeviceGetTopologyNearestGpus(nvmlDevice_t dev, nvmlGpuTopologyLevel_t level, unsigned int *count,
                                              nvmlDevice_t *out)
{
    nvmlReturn_t r = check_device(dev);
    if (r == NVML_SUCCESS && !count)
        r = NVML_ERROR_INVALID_ARGUMENT;
    return r == NVML_SUCCESS ? device_list(dev->index, level, count, out) : r;
}

nvmlReturn_t nvmlSystemGetTopologyGpuSet(unsigned int cpu, unsigned int *count, nvmlDevice_t *out)
{
    (void)cpu;
    count_call();
    if (!initialised())
        return NVML_ERROR_UNINITIALIZED;
    return count ? device_list(-1, NVML_TOPOLOGY_SYSTEM, count, out) : NVML_ERROR_INVALID_ARGUMENT;
}

/* Link 0 of a device reaches the other of its pair; it has no other link. */
static nvmlReturn_t nvlink_remote(nvmlDevice_t dev, unsigned link, nvmlPciInfo_t *pci)
{
    nvmlReturn_t r = check_device(dev);
    if (r != NVML_SUCCESS)
        return r;
    int peer = dev->index ^ 1;
    if (link != 0 || peer >= fakegpu_config()->devices)
        return NVML_ERROR_NOT_SUPPORTED;
    return pci_info(&devices[peer], pci);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t dev, unsigned int link, nvmlPciInfo_t *pci)
{
    return nvlink_remote(dev, link, pci);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned int link, nvmlPciInfo_t *pci)
{
    return nvlink_remote(dev, link, pci);
}

/* ---- utilization: the device time of the last second ---- */

static unsigned long long clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static unsigned percent(unsigned long long busy_ns)
{
    return (unsigned)((busy_ns * 100 + FAKEGPU_BUSY_WINDOW_NS / 2) / FAKEGPU_BUSY_WINDOW_NS);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *utilization)
{
    nvmlReturn_t r = check_device(dev);
    if (r == NVML_SUCCESS && !utilization)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r != NVML_SUCCESS)
        return r;
    unsigned long long busy;
    fakegpu_state_busy(dev->index, clock_ns(CLOCK_MONOTONIC), &busy, NULL, 0);
    utilization->gpu = percent(busy);
    utilization->memory = 0; /* kernels of the fake touch no device memory bandwidth worth telling */
    return NVML_SUCCESS;
}

/*
 * One sample per process that ran kernels in the last second, taken now
 * (none when the caller has seen one of now or later), by NVML's size
 * protocol: *count in = the capacity of the caller's array (has_array: it
 * gave one), out = the samples there are; NOT_FOUND when there are none.
 * On NVML_SUCCESS, busy and *now_us hold them.
 */
static nvmlReturn_t samples(nvmlDevice_t dev, unsigned long long last_seen_us, int has_array, unsigned *count,
                            struct fakegpu_proc_figure *busy, unsigned long long *now_us)
{
    *now_us = clock_ns(CLOCK_REALTIME) / 1000;
    unsigned long long device;
    unsigned n = *now_us > last_seen_us
                     ? fakegpu_state_busy(dev->index, clock_ns(CLOCK_MONOTONIC), &device, busy, FAKEGPU_MAX_PROCS)
                     : 0;
    n = n < FAKEGPU_MAX_PROCS ? n : FAKEGPU_MAX_PROCS;
    nvmlReturn_t r = n == 0 ? NVML_ERROR_NOT_FOUND
                     : !has_array || *count < n ? NVML_ERROR_INSUFFICIENT_SIZE
                                                : NVML_SUCCESS;
    *count = n;
    return r;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp)
{
    nvmlReturn_t r = check_device(dev);
    if (r == NVML_SUCCESS && !processSamplesCount)
        r = NVML_ERROR_INVALID_ARGUMENT;
    struct fakegpu_proc_figure busy[FAKEGPU_MAX_PROCS];
    unsigned long long now_us;
    if (r == NVML_SUCCESS)
        r = samples(dev, lastSeenTimeStamp, utilization != NULL, processSamplesCount, busy, &now_us);
    for (unsigned i = 0; r == NVML_SUCCESS && i < *processSamplesCount; i++)
        utilization[i] = (nvmlProcessUtilizationSample_t){ .pid = (unsigned)busy[i].pid, .timeStamp = now_us,
                                                           .smUtil = percent(busy[i].value) };
    return r;
}

nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t dev, nvmlProcessesUtilizationInfo_t *info)
{
    nvmlReturn_t r = check_device(dev);
    if (r == NVML_SUCCESS && !info)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && info->version != nvmlProcessesUtilizationInfo_v1)
        r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    struct fakegpu_proc_figure busy[FAKEGPU_MAX_PROCS];
    unsigned long long now_us;
    if (r == NVML_SUCCESS)
        r = samples(dev, info->lastSeenTimeStamp, info->procUtilArray != NULL, &info->processSamplesCount, busy,
                    &now_us);
    for (unsigned i = 0; r == NVML_SUCCESS && i < info->processSamplesCount; i++)
        info->procUtilArray[i] = (nvmlProcessUtilizationInfo_v1_t){
            .timeStamp = now_us, .pid = (unsigned)busy[i].pid, .smUtil = percent(busy[i].value)
        };
    return r;
}

/* nvidia-smi's private table (c4fe3e6c-...): its size (shorter than
 * r580's 0x870) and functions not emulated. */
static const void *const smi_table[36] = { (const void *)sizeof(smi_table) };
static const unsigned char smi_id[16] = { 0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
                                          0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4 };

nvmlReturn_t nvmlInternalGetExportTable(const void **table, const void *id)
{
    count_call();
    if (table && id && memcmp(id, smi_id, sizeof(smi_id)) == 0) {
        *table = smi_table;
        return NVML_SUCCESS;
    }
    const void *t = id ? fakegpu_export_table(id) : NULL;
    if (!table || !t)
        return NVML_ERROR_INVALID_ARGUMENT;
    *table = t;
    return NVML_SUCCESS;
}

/*
 * Events: critical XIDs, as a test injects them.  FAKENVML_XID_FILE names
 * a file of lines "INDEX XID" (a test appends them); each event set reads
 * the lines it has not given yet, for the devices registered to it.
 */
struct nvmlEventSet_st {
    unsigned long long types[FAKEGPU_MAX_DEVICES]; /* registered, per device */
    long offset;                                   /* into the file: lines given so far */
};

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    count_call();
    if (!initialised())
        return NVML_ERROR_UNINITIALIZED;
    if (!set || !(*set = calloc(1, sizeof(**set))))
        return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types, nvmlEventSet_t set)
{
    nvmlReturn_t r = check_device(dev);
    if (r != NVML_SUCCESS || !set)
        return r != NVML_SUCCESS ? r : NVML_ERROR_INVALID_ARGUMENT;
    if (types & ~nvmlEventTypeXidCriticalError)
        return NVML_ERROR_NOT_SUPPORTED;
    set->types[dev->index] |= types;
    return NVML_SUCCESS;
}

/* The next line for a registered device, if the file has one. */
static int next_xid(nvmlEventSet_t set, nvmlEventData_t *data)
{
    const char *path = getenv("FAKENVML_XID_FILE");
    FILE *f = path ? fopen(path, "re") : NULL;
    int found = 0;
    unsigned index;
    unsigned long long xid;
    if (!f)
        return 0;
    char line[128];
    fseek(f, set->offset, SEEK_SET);
    while (!found && fgets(line, sizeof(line), f) && strchr(line, '\n')) {
        set->offset = ftell(f);
        if (sscanf(line, "%u %llu", &index, &xid) == 2 && (int)index < fakegpu_config()->devices &&
            (set->types[index] & nvmlEventTypeXidCriticalError)) {
            *data = (nvmlEventData_t){ .device = &devices[index], .eventType = nvmlEventTypeXidCriticalError,
                                       .eventData = xid };
            found = 1;
        }
    }
    fclose(f);
    return found;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    count_call();
    if (!set || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned waited = 0;; waited += 20) {
        if (next_xid(set, data))
            return NVML_SUCCESS;
        if (waited >= timeoutms)
            return NVML_ERROR_TIMEOUT;
        usleep(20000);
    }
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    count_call();
    free(set);
    return NVML_SUCCESS;
}
