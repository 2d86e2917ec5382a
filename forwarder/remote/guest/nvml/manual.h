/* The remote NVML's calls written by hand, the guest's side (manual.c).
 * Which calls they are, and each one's request and reply, are declared in
 * forwarder/remote/spec/nvml.remote; the generated vgpu_remote_nvml_guest.h
 * declares them. */
#pragma once

#include "vgpu/nvml_abi.h"

#include "vgpu_remote_nvml_guest.h"
