/*
 * A CUDA program for vgpu-doctor's tests to inspect alive:
 *
 *   doctor_client READY SECONDS
 *
 * Loads libcuda.so.1 as applications do, calls cuInit(0) (vgpu joins its
 * vGPU, or refuses it, and writes its status record), writes cuInit's
 * result to READY ("-": nowhere), then stays alive for SECONDS and exits 0.
 * With WAITER_NVML_FIRST=1 it calls nvmlInit_v2 first, as servers that
 * discover GPUs through NVML do: vgpu joins without a process slot, then
 * takes one at cuInit.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: doctor_client READY SECONDS\n");
        return 2;
    }
    const char *nvml_first = getenv("WAITER_NVML_FIRST");
    if (nvml_first && strcmp(nvml_first, "1") == 0) {
        void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        int (*nvml_init)(void) = nvml ? (int (*)(void))dlsym(nvml, "nvmlInit_v2") : NULL;
        if (!nvml_init || nvml_init() != 0) {
            fprintf(stderr, "doctor_client: nvmlInit_v2 failed\n");
            return 1;
        }
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    int (*init)(unsigned) = cuda ? (int (*)(unsigned))dlsym(cuda, "cuInit") : NULL;
    if (!init) {
        fprintf(stderr, "waiter: no cuInit: %s\n", dlerror());
        return 1;
    }
    int r = init(0);
    if (strcmp(argv[1], "-") != 0) {
        char tmp[4096];
        snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", r) < 0 || fclose(f) != 0 || rename(tmp, argv[1]) != 0) {
            perror(argv[1]);
            return 1;
        }
    }
    usleep((useconds_t)(atof(argv[2]) * 1e6));
    return 0;
}
