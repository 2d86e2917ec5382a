/*
 * Devices: which ones CUDA_VISIBLE_DEVICES shows, and what each says of
 * itself (name, memory, UUID, PCI location, attributes, limits of 1D
 * linear textures, atomics with the host, no LUID).  Each is a Hopper (as a
 * GH200's, whose link to the host has native atomics).
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * CUDA_VISIBLE_DEVICES, read once at cuInit as the real driver does: CUdevice
 * k is physical device g_visible[k].  Entries are indexes or (prefixes of)
 * GPU-... UUIDs; as with the driver, the list ends at the first entry that
 * names no device (or one already listed).  Written once by read_visible()
 * under g_visible_once, read-only afterwards.
 */
static int g_visible[FAKEGPU_MAX_DEVICES];
static int g_nvisible;
static pthread_once_t g_visible_once = PTHREAD_ONCE_INIT;

static int visible_entry(const char *e, int physical)
{
    if (*e >= '0' && *e <= '9') {
        char *end;
        long k = strtol(e, &end, 10);
        return *end == '\0' && k < physical ? (int)k : -1;
    }
    int match = -1;
    for (int d = 0; d < physical; d++) {
        char uuid[48];
        fakegpu_device_uuid_string(d, uuid);
        if (strncasecmp(uuid, e, strlen(e)) == 0) {
            if (match >= 0)
                return -1; /* ambiguous prefix */
            match = d;
        }
    }
    return match;
}

static void read_visible(void)
{
    int physical = fakegpu_config()->devices;
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (!cvd) {
        for (int d = 0; d < physical; d++)
            g_visible[d] = d;
        g_nvisible = physical;
        return;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", cvd);
    for (char *save = NULL, *e = strtok_r(buf, ",", &save); e && g_nvisible < physical;
         e = strtok_r(NULL, ",", &save)) {
        while (*e == ' ')
            e++;
        int d = visible_entry(e, physical);
        for (int k = 0; d >= 0 && k < g_nvisible; k++)
            if (g_visible[k] == d)
                d = -1;
        if (d < 0)
            break;
        g_visible[g_nvisible++] = d;
    }
}

void fake_devices_init(void)
{
    pthread_once(&g_visible_once, read_visible);
}

int fake_device_count(void)
{
    return g_nvisible;
}

int fake_valid_device(CUdevice dev)
{
    return dev >= 0 && dev < fake_device_count();
}

/* The physical device (identity, shared accounting) of a valid CUdevice. */
int fake_physical_device(CUdevice dev)
{
    return g_visible[dev];
}

unsigned long long fake_total_memory(void)
{
    return fakegpu_config()->memory;
}

/* ------------------------------------------------------------------------ */
/* Devices                                                                  */

CUresult cuDeviceGetCount(int *count)
{
    ENTER();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = fake_device_count();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    ENTER();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    ENTER();
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "Fake GPU %d", fake_physical_device(dev));
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    ENTER();
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)fake_total_memory();
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    ENTER();
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    unsigned long long total = fake_total_memory();
    *bytes = total > UINT_MAX ? UINT_MAX : (unsigned int)total;
    return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid *uuid, CUdevice dev)
{
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    fakegpu_device_uuid(fake_physical_device(dev), (unsigned char *)uuid->bytes);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    ENTER();
    return device_uuid(uuid, dev);
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    ENTER();
    return device_uuid(uuid, dev);
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    ENTER();
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = (int)fakegpu_device_pci_bus(fake_physical_device(dev)); break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = SM_COUNT; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *pi = THREADS_PER_SM; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: /* managed memory's advice and prefetches (memory/managed.c) */
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: *pi = 1; break;
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    ENTER();
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%04x:%02x:%02x.0", 0u, fakegpu_device_pci_bus(fake_physical_device(dev)), 0u);
    if (n >= len)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(pciBusId, buf, (size_t)n + 1);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    ENTER();
    if (!dev || !pciBusId)
        return CUDA_ERROR_INVALID_VALUE;
    int index = fakegpu_device_from_pci_bus_id(pciBusId);
    for (int k = 0; index >= 0 && k < fake_device_count(); k++)
        if (fake_physical_device(k) == index) {
            *dev = k;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_DEVICE; /* no such GPU, or hidden by CUDA_VISIBLE_DEVICES */
}

/* The elements of a format and channel count (1, 2 or 4) a 1D linear
 * texture may have: 2^28, as a Hopper's. */
CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t *maxWidthInElements, CUarray_format format, unsigned numChannels,
                                            CUdevice dev)
{
    ENTER();
    if (!maxWidthInElements || (numChannels != 1 && numChannels != 2 && numChannels != 4))
        return CUDA_ERROR_INVALID_VALUE;
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_FLOAT: break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *maxWidthInElements = (size_t)1 << 28;
    return CUDA_SUCCESS;
}

/* What the link to the host does natively of each atomic operation. */
static unsigned host_atomic(CUatomicOperation op)
{
    const unsigned ints = CU_ATOMIC_CAPABILITY_SIGNED | CU_ATOMIC_CAPABILITY_UNSIGNED,
                   sizes = CU_ATOMIC_CAPABILITY_SCALAR_32 | CU_ATOMIC_CAPABILITY_SCALAR_64;
    switch (op) {
    case CU_ATOMIC_OPERATION_INTEGER_ADD:
    case CU_ATOMIC_OPERATION_INTEGER_MIN:
    case CU_ATOMIC_OPERATION_INTEGER_MAX:
    case CU_ATOMIC_OPERATION_AND:
    case CU_ATOMIC_OPERATION_OR:
    case CU_ATOMIC_OPERATION_XOR: return ints | sizes | CU_ATOMIC_CAPABILITY_REDUCTION;
    case CU_ATOMIC_OPERATION_INTEGER_INCREMENT:
    case CU_ATOMIC_OPERATION_INTEGER_DECREMENT: return CU_ATOMIC_CAPABILITY_UNSIGNED | CU_ATOMIC_CAPABILITY_SCALAR_32;
    case CU_ATOMIC_OPERATION_EXCHANGE:
    case CU_ATOMIC_OPERATION_CAS: return ints | sizes | CU_ATOMIC_CAPABILITY_SCALAR_128;
    case CU_ATOMIC_OPERATION_FLOAT_ADD:
        return sizes | CU_ATOMIC_CAPABILITY_REDUCTION | CU_ATOMIC_CAPABILITY_VECTOR_32x4;
    default: return 0; /* CU_ATOMIC_OPERATION_FLOAT_MIN, _MAX */
    }
}

CUresult cuDeviceGetHostAtomicCapabilities(unsigned int *capabilities, const CUatomicOperation *operations,
                                           unsigned int count, CUdevice dev)
{
    ENTER();
    if (!fake_valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!capabilities || !operations || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++)
        if ((unsigned)operations[i] >= CU_ATOMIC_OPERATION_MAX)
            return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++)
        capabilities[i] = host_atomic(operations[i]);
    return CUDA_SUCCESS;
}

/* A LUID is a WDDM adapter's, Windows' only: the driver on Linux has none. */
CUresult cuDeviceGetLuid(char *luid, unsigned int *deviceNodeMask, CUdevice dev)
{
    ENTER();
    (void)luid, (void)deviceNodeMask, (void)dev;
    return CUDA_ERROR_NOT_SUPPORTED;
}
