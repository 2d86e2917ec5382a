/*
 * What each real library is, for the pathfinder and for the fallbacks:
 * its names, the function every real copy defines, and what its calls
 * return without it (specs.c).
 */
#pragma once

/* What a library is, for the pathfinder and for the fallbacks. */
struct vgpu_driver_spec {
    const char *what;             /* "CUDA driver", for messages */
    const char *soname;           /* "libcuda.so.1" */
    const char *file_prefix;      /* "libcuda.so": names a real copy may carry */
    const char *init_symbol;      /* a function every real copy defines */
    const char *override_env;     /* "VGPU_REAL_LIBCUDA" */
    void *(*missing_fn)(void);    /* returns the "function not found" code */
    void *(*nodriver_fn)(void);   /* returns the "no driver" code */
};

/* What each real library is (forwarder/specs.c). */
extern const struct vgpu_driver_spec vgpu_cuda_spec;
extern const struct vgpu_driver_spec vgpu_nvml_spec;
