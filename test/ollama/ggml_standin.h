/*
 * The backend interface of the ggml stand-ins: what Ollama's discovery and
 * its runner need from ggml, and nothing more.  ggml's own interface is
 * larger (ggml-backend.h); these are its shapes, not its ABI.
 */
#ifndef GGML_STANDIN_H
#define GGML_STANDIN_H

#include <stddef.h>

#define GGML_STANDIN_EXPORT __attribute__((visibility("default")))

/* What ggml's device properties carry for a CUDA device. */
struct ggml_standin_props {
    char name[256];
    char pci[32];      /* ggml's device_id: cuDeviceGetPCIBusId */
    size_t free;       /* cuMemGetInfo_v2 in the device's primary context, */
    size_t total;      /* as ggml's cudaMemGetInfo reports them */
    size_t total_mem;  /* cuDeviceTotalMem_v2 */
};

/* A backend registry: one per loaded backend library.  The int results are
 * CUresults; memory a backend allocates stays allocated until exit. */
struct ggml_standin_reg {
    const char *name;
    int (*device_count)(int *count);
    int (*device_props)(int dev, struct ggml_standin_props *props);
    int (*alloc)(int dev, size_t bytes);
    const char *(*error_name)(int result);
    const char *(*driver_path)(void); /* the file the backend's cuInit came from */
};

/* libggml-base.so: the registry accessors, and the log every ggml library writes through. */
const char *ggml_backend_reg_name(const struct ggml_standin_reg *reg);
int ggml_backend_reg_dev_count(const struct ggml_standin_reg *reg, int *count);
int ggml_backend_dev_get_props(const struct ggml_standin_reg *reg, int dev, struct ggml_standin_props *props);
void ggml_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* libggml.so: loads a backend library by path, as GGML_BACKEND_DL builds do. */
const struct ggml_standin_reg *ggml_backend_load(const char *path);

/* Each backend library (cuda_v13/libggml-cuda.so). */
const struct ggml_standin_reg *ggml_backend_init(void);

#endif
