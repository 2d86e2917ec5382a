/* The remote NVML's hand-written calls, the guest's side (manual.c; listed in manual.list). */
#pragma once

#include "vgpu/nvml_abi.h"

const char *vgpu_remote_guest_nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device);

/* Process lists: the executor's vGPU's, host pids. */
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                                    nvmlProcessInfo_v1_t *infos);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                       nvmlProcessInfo_v2_t *infos);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                       nvmlProcessInfo_t *infos);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                                     nvmlProcessInfo_v1_t *infos);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                        nvmlProcessInfo_v2_t *infos);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                        nvmlProcessInfo_t *infos);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                                       nvmlProcessInfo_v1_t *infos);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                          nvmlProcessInfo_v2_t *infos);
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                          nvmlProcessInfo_t *infos);

/* nvidia-smi's private table: its size, no function. */
nvmlReturn_t vgpu_remote_guest_nvmlInternalGetExportTable(const void **table, const void *id);

/* Field values, at most 256 a call. */
nvmlReturn_t vgpu_remote_guest_nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t *values);
