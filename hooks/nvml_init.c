/* NVML initialisation: admission, and error strings that work without a driver. */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_nvml_slots.h"

static nvmlReturn_t admit_then(const char *name, nvmlReturn_t (*real)(unsigned int), unsigned int flags)
{
    nvmlReturn_t r = vgpu_backend_nvml_admit();
    if (r == NVML_SUCCESS)
        r = real(flags);
    vgpu_trace(name, r, "0x%x", flags);
    return r;
}

static nvmlReturn_t init_v1(unsigned int flags)
{
    (void)flags;
    return VGPU_REAL_NVML(nvmlInit)();
}

static nvmlReturn_t init_v2(unsigned int flags)
{
    (void)flags;
    return VGPU_REAL_NVML(nvmlInit_v2)();
}

VGPU_EXPORT nvmlReturn_t nvmlInit(void)
{
    return admit_then("nvmlInit", init_v1, 0);
}

VGPU_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return admit_then("nvmlInit_v2", init_v2, 0);
}

VGPU_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    return admit_then("nvmlInitWithFlags", VGPU_REAL_NVML(nvmlInitWithFlags), flags);
}

/* Returns a string, not a code: the generic "no driver" fallback would hand
 * the caller an integer to dereference. */
VGPU_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    if (vgpu_dispatch_have_driver(&vgpu_nvml))
        return VGPU_REAL_NVML(nvmlErrorString)(result);
    switch (result) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
        return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
        return "Function Not Found";
    default:
        return "Unknown Error";
    }
}
