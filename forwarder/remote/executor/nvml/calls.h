/* The remote NVML's hand-written calls, the executor's side (manual.c; listed in manual.list). */
#pragma once

#include "forwarder/remote/executor/executor.h"

int vgpu_exec_nvmlErrorString(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetHandleByPciBusId(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetHandleByPciBusId_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetHandleByUUID(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetHandleBySerial(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetComputeRunningProcesses(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetComputeRunningProcesses_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetComputeRunningProcesses_v3(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetGraphicsRunningProcesses(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetGraphicsRunningProcesses_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetGraphicsRunningProcesses_v3(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetMPSComputeRunningProcesses(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetMPSComputeRunningProcesses_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len);
int vgpu_exec_nvmlDeviceGetMPSComputeRunningProcesses_v3(struct vgpu_exec *x, void *fn, const void *req, size_t len);

/* nvidia-smi's private table: its size. */
int vgpu_exec_nvmlInternalGetExportTable(struct vgpu_exec *x, void *fn, const void *req, size_t len);

/* Field values. */
int vgpu_exec_nvmlDeviceGetFieldValues(struct vgpu_exec *x, void *fn, const void *req, size_t len);
