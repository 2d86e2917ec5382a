/* The remote NVML's calls written by hand, the executor's side (manual.c).
 * Which calls they are, and each one's request and reply, are declared in
 * forwarder/remote/spec/nvml.remote; the generated vgpu_remote_nvml_exec.h
 * declares their handlers. */
#pragma once

#include "forwarder/remote/executor/executor.h"

#include "vgpu_remote_nvml_exec.h"
