/*
 * Error names and strings (cuGetErrorName, cuGetErrorString), answered
 * before cuInit too.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

struct error_text {
    CUresult code;
    const char *name;
    const char *text;
};

#define E(code, text)                                                                                                  \
    {                                                                                                                  \
        code, #code, text                                                                                              \
    }
static const struct error_text g_errors[] = {
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef E

static const struct error_text *find_error(CUresult error)
{
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].code == error)
            return &g_errors[i];
    return NULL;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    COUNT_CALL();
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const struct error_text *e = find_error(error);
    *pStr = e ? e->text : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    COUNT_CALL();
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const struct error_text *e = find_error(error);
    *pStr = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
