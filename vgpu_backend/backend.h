/*
 * The vGPU backend: the one interface through which hooks ask what a process
 * may see and use.  Hooks translate a driver call into these questions and
 * carry out the answer; the backend decides (from BAR0, the mediator or the
 * environment) and queries the real driver through the forwarder.
 *
 * With no vGPU configured every answer is the physical GPU's (pass-through).
 *
 * Behind it (docs/design/architecture.md): contract/ (what the libraries and the
 * mediator share: BAR0, the protocol, settings, the arbiter), join/ (which
 * vGPU this process is in, and which of its devices is current), memory/
 * (the quota), compute/ (the compute share's gate) and nvml/ (what NVML
 * shows).  Hooks include this header and nothing of theirs.
 */
#pragma once

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/nvml_abi.h"

/* The devices a vGPU has at most (VGPU_MAX_DEVICES, asserted equal). */
#define VGPU_BACKEND_MAX_DEVICES 16

/* ---- admission (cuInit, nvmlInit) ---- */

/* CUDA_SUCCESS if this process may use its vGPU, else the code cuInit
 * returns.  Called before the driver's cuInit, which then shows only the
 * vGPU's devices. */
CUresult vgpu_backend_cuda_admit(void);
/* The driver's cuInit succeeded. */
void vgpu_backend_cuda_initialised(void);
nvmlReturn_t vgpu_backend_nvml_admit(void);

/* ---- what CUDA shows ---- */

CUresult vgpu_backend_device_count(int *count);
CUresult vgpu_backend_device_total_mem(CUdevice dev, size_t *bytes);
/* Free and total memory for the current context's device. */
CUresult vgpu_backend_mem_info(size_t *free_bytes, size_t *total_bytes);

/* ---- what NVML shows ---- */

nvmlReturn_t vgpu_backend_nvml_device_count(unsigned int *count);
/* The vGPU's device index (the vGPU's numbering, which CUDA shares). */
nvmlReturn_t vgpu_backend_nvml_device_by_index(unsigned int index, nvmlDevice_t *dev);
/* A lookup by UUID, PCI bus id or serial answered r: NOT_FOUND unless the
 * device is the vGPU's. */
nvmlReturn_t vgpu_backend_nvml_device_found(nvmlReturn_t r, nvmlDevice_t *dev);
nvmlReturn_t vgpu_backend_nvml_device_index(nvmlDevice_t dev, unsigned int *index);
/* The vGPU's processes on dev (BAR0's process table) that the caller can
 * see, under the pids it knows them by (pid_ns.h), however many, as
 * nvmlDeviceGetComputeRunningProcesses (version 1) or its _v2/_v3 (2, 3)
 * returns them into out, which has room for *count; -1 when no vGPU shapes
 * the answer (ask the driver). */
int vgpu_backend_nvml_processes(nvmlDevice_t dev, unsigned int *count, void *out, int version);
/* The driver's graphics (or, mps, MPS compute) processes on dev that are
 * the vGPU's, as the _v1 (version 1) or _v2/_v3 entry points return them;
 * -1 when no vGPU shapes the answer. */
int vgpu_backend_nvml_listed_processes(nvmlDevice_t dev, bool mps, unsigned int *count, void *out, int version);
/* The vGPU's utilization of dev over the last second (docs/reference/nvml.md); -1
 * when no vGPU shapes the answer. */
int vgpu_backend_nvml_utilization(nvmlDevice_t dev, nvmlUtilization_t *u);
/* The driver's per-process samples, the vGPU's processes' only, by NVML's
 * size protocol; -1 when no vGPU shapes the answer. */
int vgpu_backend_nvml_process_utilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *samples,
                                          unsigned int *count, unsigned long long last_seen);
int vgpu_backend_nvml_processes_utilization(nvmlDevice_t dev, nvmlProcessesUtilizationInfo_t *info);
/* NVML_SUCCESS when a query may reach dev (one of the vGPU's devices, or no
 * vGPU), else INVALID_ARGUMENT, as NVML answers a bad handle. */
nvmlReturn_t vgpu_backend_nvml_device_check(nvmlDevice_t dev);
/* Topology queries that answer with devices: the vGPU's only; -1 when no
 * vGPU shapes the answer. */
int vgpu_backend_nvml_nearest_gpus(nvmlDevice_t dev, nvmlGpuTopologyLevel_t level, unsigned int *count,
                                   nvmlDevice_t *out);
int vgpu_backend_nvml_gpu_set(unsigned int cpu, unsigned int *count, nvmlDevice_t *out);
/* Turns the physical device's memory figures, as NVML reported them, into
 * the vGPU's. */
void vgpu_backend_nvml_memory_view(nvmlDevice_t dev, unsigned long long *total, unsigned long long *free_bytes,
                                   unsigned long long *used);

/* ---- device memory accounting ---- */

enum vgpu_mem_kind {
    VGPU_MEM_LINEAR,   /* cuMemAlloc, cuMemAllocPitch */
    VGPU_MEM_MANAGED,  /* cuMemAllocManaged */
    VGPU_MEM_ASYNC,    /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
    VGPU_MEM_PHYSICAL, /* cuMemCreate */
    VGPU_MEM_ARRAY,    /* cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate */
};

/* One allocation in flight: claimed before the driver call, settled after. */
struct vgpu_mem_claim {
    enum vgpu_mem_kind kind;
    int device;          /* CUDA device, or -1 for the current context's */
    size_t bytes;
    CUmemoryPool pool;   /* VGPU_MEM_ASYNC: the pool, or NULL for the device's current one */
    /* The backend's, between claim and settle. */
    int vdev;            /* vGPU device counted against; -1: not counted */
    uint64_t taken;      /* bytes taken from the quota */
    CUcontext ctx;
};

/* May the caller take c->bytes more?  CUDA_SUCCESS or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult vgpu_backend_mem_claim(struct vgpu_mem_claim *c);
/*
 * The driver answered r; on success handle identifies the allocation and
 * c->bytes is what it really takes (a pitched allocation's rows are padded).
 * Returns r, or CUDA_ERROR_OUT_OF_MEMORY when the real size does not fit in
 * the quota: the caller then frees the allocation and returns that.
 */
CUresult vgpu_backend_mem_settle(struct vgpu_mem_claim *c, CUresult r, uintptr_t handle);

/* What the backend records of a counted allocation, so that its free gives
 * back exactly what it took (memory/alloc_table.h keeps them). */
enum vgpu_alloc_class {
    VGPU_ALLOC_POINTER,  /* cuMemAlloc*, cuMemAllocPitch*, cuMemAllocManaged */
    VGPU_ALLOC_PHYSICAL, /* cuMemCreate handles */
    VGPU_ALLOC_ARRAY,    /* CUarray, CUmipmappedArray */
};

struct vgpu_alloc {
    uintptr_t handle;
    uint64_t bytes;
    void *ctx;     /* context it belongs to; NULL: none (VMM handles) */
    int16_t dev;   /* vGPU device index */
    uint8_t cls;   /* enum vgpu_alloc_class */
    uint8_t used;  /* slot in use (the table's) */
};

/*
 * One free in flight.  The allocation's record leaves the books before the
 * driver call, so an address the driver hands out again at once (to another
 * thread) is never confused with the one being freed; end() gives the bytes
 * back, or restores the record if the driver refused the free.
 */
struct vgpu_mem_free {
    bool counted;          /* the backend's, between begin and end */
    struct vgpu_alloc rec;
};
void vgpu_backend_mem_free_begin(struct vgpu_mem_free *f, enum vgpu_mem_kind kind, uintptr_t handle);
void vgpu_backend_mem_free_end(struct vgpu_mem_free *f, CUresult r);

/* A memory pool was trimmed or destroyed: count what it holds now. */
void vgpu_backend_pool_changed(CUmemoryPool pool, bool destroyed);

/* ---- graphs' memory nodes (graph_mem.c) ---- */

#define VGPU_GRAPH_MAX_DEVICES 64 /* CUDA devices whose graph memory is counted */
/* What a graph launch claimed, to settle after the driver's answer. */
struct vgpu_graph_claim {
    bool allocates;                                 /* the graph has allocation nodes */
    uint64_t device_bytes[VGPU_GRAPH_MAX_DEVICES];  /* what they take, per CUDA device */
    uint64_t claimed[VGPU_BACKEND_MAX_DEVICES];     /* taken from the quota, per vGPU device */
};
/* A graph was instantiated as x: what its allocation nodes take is noted. */
void vgpu_backend_graph_instantiated(CUgraphExec x, CUgraph g);
void vgpu_backend_graph_destroyed(CUgraphExec x);
/* Before launching x: CUDA_SUCCESS, or OUT_OF_MEMORY when the graph memory
 * reserve could not grow by what x needs within the quota. */
CUresult vgpu_backend_graph_launch_claim(CUgraphExec x, struct vgpu_graph_claim *c);
/* After the launch (whatever its result): the reserve as the driver has it. */
void vgpu_backend_graph_launch_settle(const struct vgpu_graph_claim *c);
/* cuDeviceGraphMemTrim(dev) returned: count what the reserve holds now. */
void vgpu_backend_graph_mem_trimmed(CUdevice dev);

/* ---- contexts: each takes device memory no allocation call reports ---- */

/* Before a context is created on dev: CUDA_SUCCESS, or OUT_OF_MEMORY when
 * the vGPU has no room for one.  *token carries state to the settle call. */
CUresult vgpu_backend_ctx_claim(CUdevice dev, bool primary, uint64_t *token);
/* After: r is the driver's answer, ctx the new context. */
CUresult vgpu_backend_ctx_settle(CUdevice dev, bool primary, CUresult r, CUcontext ctx, uint64_t token);
/* A context was destroyed (primary: released to zero or reset); what was
 * allocated in it is gone with it. */
void vgpu_backend_ctx_destroyed(CUcontext ctx);
void vgpu_backend_primary_released(CUdevice dev, bool reset);

/* ---- context limits: the stack, heap and printf FIFO reserve device memory ---- */

/* One cuCtxSetLimit in flight: claimed before the driver call, settled after. */
struct vgpu_limit_claim {
    bool counted; /* the backend's, between claim and settle */
    CUcontext ctx;
    int vdev;
    uint64_t taken;
};

/* May the current context set limit to value?  CUDA_SUCCESS, or
 * CUDA_ERROR_OUT_OF_MEMORY when what it would reserve is past the quota. */
CUresult vgpu_backend_limit_claim(CUlimit limit, size_t value, struct vgpu_limit_claim *c);
/* The driver answered result. */
void vgpu_backend_limit_settle(struct vgpu_limit_claim *c, CUresult result);

/* ---- compute ---- */

/* Before each kernel or graph launch on stream (ptsz: through a _ptsz entry
 * point, where NULL is the per-thread default stream): waits, when the
 * vGPU has a compute share, until it may put work on its GPU. */
CUresult vgpu_backend_launch_admit(CUstream stream, bool ptsz);
/* After it, on the same thread, with the driver's answer. */
void vgpu_backend_launch_done(CUresult r);
/* Around a synchronisation (a thread waiting for its GPU work): the vGPU
 * is busy meanwhile, not idle.  begin's answer goes to end. */
void *vgpu_backend_sync_begin(void);
void vgpu_backend_sync_end(void *busy);
/* Around a stream capture's begin (beginning before the driver's call,
 * begun after it, with its answer) and end: while one is under way the
 * share's bookkeeping makes no driver call, which would break it, and
 * launches into the capturing stream pass (vgpu_backend/compute/capture.c). */
void vgpu_backend_capture_beginning(void);
void vgpu_backend_capture_begun(CUstream stream, bool ptsz, CUresult r);
void vgpu_backend_capture_ended(CUstream stream, bool ptsz, CUresult r);
/* Whether work put on stream now is recorded into a graph rather than run
 * (a stream-ordered allocation there is a graph's memory node, counted at
 * the graph's launch).  Asks the driver only while a capture is under way. */
bool vgpu_backend_stream_captured(CUstream stream, bool ptsz);
