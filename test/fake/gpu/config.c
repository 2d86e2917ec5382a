/*
 * The fake GPU's configuration, read from the environment once per process
 * (the variables are listed in fakegpu.h and ../README.md).
 */
#include "test/fake/gpu/fakegpu.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#define DEFAULT_DEVICES 2
#define DEFAULT_MEMORY (16ULL << 30)
#define DEFAULT_CTX_OVERHEAD (256ULL << 20)
#define DEFAULT_LAUNCH_NS 2000ULL /* about an H100's cuLaunchKernel */
#define DEFAULT_KERNEL_NS 1000ULL
#define DEFAULT_TIMESLICE_NS 200000ULL /* kernels of 200 us alternate one by one */

/* Owned by this file: written once (g_config_once), read-only after. */
static struct fakegpu_config g_config;
static pthread_once_t g_config_once = PTHREAD_ONCE_INIT;

int fakegpu_parse_size(const char *text, unsigned long long *out)
{
    if (!text || !isdigit((unsigned char)*text))
        return -1;

    errno = 0;
    char *end;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno == ERANGE)
        return -1;

    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        end++;
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'b' || *end == 'B')
            end++;
    } else if (*end == 'b' || *end == 'B') {
        end++;
    }
    if (*end != '\0')
        return -1;
    if (shift && value > (ULLONG_MAX >> shift))
        return -1;

    *out = value << shift;
    return 0;
}

static unsigned long long env_size(const char *name, unsigned long long fallback)
{
    unsigned long long value;
    const char *text = getenv(name);
    return text && fakegpu_parse_size(text, &value) == 0 ? value : fallback;
}

static int env_device_count(void)
{
    const char *text = getenv("FAKEGPU_DEVICES");
    if (!text || !*text)
        return DEFAULT_DEVICES;
    char *end;
    long value = strtol(text, &end, 10);
    if (*end != '\0' || value < 0)
        return DEFAULT_DEVICES;
    return value > FAKEGPU_MAX_DEVICES ? FAKEGPU_MAX_DEVICES : (int)value;
}

/* A duration in nanoseconds: digits only. */
static unsigned long long env_ns(const char *name, unsigned long long fallback)
{
    const char *text = getenv(name);
    if (!text || !isdigit((unsigned char)*text))
        return fallback;
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    return *end == '\0' && errno == 0 ? value : fallback;
}

static void load_config(void)
{
    g_config.devices = env_device_count();
    g_config.memory = env_size("FAKEGPU_MEMORY", DEFAULT_MEMORY);
    g_config.ctx_overhead = env_size("FAKEGPU_CTX_OVERHEAD", DEFAULT_CTX_OVERHEAD);
    g_config.ctx_extra = env_size("FAKEGPU_CTX_EXTRA", g_config.ctx_overhead);
    g_config.launch_ns = env_ns("FAKEGPU_LAUNCH_NS", DEFAULT_LAUNCH_NS);
    g_config.kernel_ns = env_ns("FAKEGPU_KERNEL_NS", DEFAULT_KERNEL_NS);
    g_config.timeslice_ns = env_ns("FAKEGPU_TIMESLICE_NS", DEFAULT_TIMESLICE_NS);
}

const struct fakegpu_config *fakegpu_config(void)
{
    pthread_once(&g_config_once, load_config);
    return &g_config;
}
