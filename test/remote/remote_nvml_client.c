/*
 * remote_nvml_client: what NVML shows, printed line by line, so that a run
 * on a local NVML and one through an executor can be compared
 * (test/remote/remote.sh).  It loads NVML as tools do
 * (dlopen("libnvidia-ml.so.1"), which is vgpu).  Device names, UUIDs, PCI
 * bus ids and memory, and the driver's version; then a lookup by a handle
 * it was never given.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include "vgpu/nvml_abi.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *nvml;
#define F(name) ((__typeof__(&name))sym(#name))

static void *sym(const char *name)
{
    void *p = dlsym(nvml, name);
    if (!p) {
        fprintf(stderr, "remote_nvml_client: %s missing\n", name);
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!nvml) {
        fprintf(stderr, "remote_nvml_client: %s\n", dlerror());
        return 1;
    }
    printf("nvmlInit_v2: %d\n", (int)F(nvmlInit_v2)());
    char version[96] = "";
    int r = F(nvmlSystemGetDriverVersion)(version, sizeof(version));
    printf("nvmlSystemGetDriverVersion: %d %s\n", r, version);
    unsigned n = 0;
    r = F(nvmlDeviceGetCount_v2)(&n);
    printf("nvmlDeviceGetCount_v2: %d %u\n", r, n);
    for (unsigned i = 0; i < n; i++) {
        nvmlDevice_t d;
        char name[96] = "", uuid[96] = "";
        nvmlMemory_t mem = { 0 };
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof(pci));
        printf("device %u: %d\n", i, (int)F(nvmlDeviceGetHandleByIndex_v2)(i, &d));
        r = F(nvmlDeviceGetName)(d, name, sizeof(name));
        printf("  name %d %s\n", r, name);
        r = F(nvmlDeviceGetUUID)(d, uuid, sizeof(uuid));
        printf("  uuid %d %s\n", r, uuid);
        r = F(nvmlDeviceGetMemoryInfo)(d, &mem);
        printf("  memory %d total %llu\n", r, (unsigned long long)mem.total);
        r = F(nvmlDeviceGetPciInfo_v3)(d, &pci);
        printf("  pci %d %s\n", r, pci.busId);
    }
    /* Field values of device 0: two fields, one NVML does not know. */
    if (n) {
        nvmlDevice_t d0;
        nvmlFieldValue_t fields[2] = { { .fieldId = 7 }, { .fieldId = 0 } };
        F(nvmlDeviceGetHandleByIndex_v2)(0, &d0);
        r = F(nvmlDeviceGetFieldValues)(d0, 2, fields);
        printf("field values: %d: %u %d %llu; %u %d\n", r, fields[0].fieldId, (int)fields[0].nvmlReturn,
               fields[0].value.ullVal, fields[1].fieldId, (int)fields[1].nvmlReturn);
    }
    /* nvidia-smi's private table: its size and how many functions it has. */
    static const unsigned char smi[16] = { 0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
                                           0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4 };
    const void *const *table = NULL;
    r = F(nvmlInternalGetExportTable)((const void **)&table, smi);
    size_t size = r == 0 ? (size_t)(uintptr_t)table[0] : 0, functions = 0;
    for (size_t i = 1; i < size / sizeof(void *); i++)
        functions += table[i] != NULL;
    printf("nvidia-smi's table: %d size %zu functions %zu\n", r, size, functions);
    if (argc > 1 && strcmp(argv[1], "forged") == 0) {
        char name[96];
        printf("forged handle: %d\n",
               (int)F(nvmlDeviceGetName)((nvmlDevice_t)(uintptr_t)0x7f0000004000ull, name, sizeof(name)));
    }
    printf("nvmlShutdown: %d\n", (int)F(nvmlShutdown)());
    return 0;
}
