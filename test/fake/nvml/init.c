/*
 * Fake libnvidia-ml.so.1: the devices of the fake GPU (../gpu/), seen
 * through NVML.  Here: nvmlInit and nvmlShutdown (counted, as NVML's are),
 * error strings, the driver's versions, and the count of calls the tests
 * read.
 */
#define _GNU_SOURCE
#include "test/fake/nvml/fake_nvml.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Owned by this file, with the count of calls (atomic). */
static int init_count; /* nvmlInit/nvmlShutdown nesting, under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long calls;

/* How many NVML calls this process made (the tests' probe, found by dlsym). */
unsigned long fakenvml_calls(void);
unsigned long fakenvml_calls(void)
{
    return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}

void fake_count_call(void)
{
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
}

int fake_initialised(void)
{
    pthread_mutex_lock(&lock);
    int n = init_count;
    pthread_mutex_unlock(&lock);
    return n > 0;
}

/* The real NVML (r580) starts a helper thread of its own on its first
 * init, from the calling thread and so with its signal mask: a process
 * that blocks signals later, for a signalfd, leaves that thread able to
 * take them.  FAKENVML_INIT_THREAD=1 does the same, for the mediator's test. */
static void *helper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static void start_helper(void)
{
    const char *want = getenv("FAKENVML_INIT_THREAD");
    pthread_t t;
    if (want && strcmp(want, "1") == 0 && pthread_create(&t, NULL, helper, NULL) == 0)
        pthread_detach(t);
}

static nvmlReturn_t init(void)
{
    static pthread_once_t helper_once = PTHREAD_ONCE_INIT;
    pthread_once(&helper_once, start_helper);
    fake_count_call();
    pthread_mutex_lock(&lock);
    for (int i = 0; i < FAKEGPU_MAX_DEVICES; i++)
        fake_devices[i].index = i;
    init_count++;
    pthread_mutex_unlock(&lock);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void)
{
    return init();
}

nvmlReturn_t nvmlInit_v2(void)
{
    return init();
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags;
    return init();
}

nvmlReturn_t nvmlShutdown(void)
{
    fake_count_call();
    pthread_mutex_lock(&lock);
    nvmlReturn_t r = init_count > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
    if (init_count > 0)
        init_count--;
    pthread_mutex_unlock(&lock);
    return r;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    fake_count_call();
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
    default: return "Unknown Error";
    }
}

nvmlReturn_t fake_copy_string(char *dst, unsigned int len, const char *src)
{
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(dst, src, strlen(src) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    fake_count_call();
    return fake_initialised() ? fake_copy_string(version, length, "580.00.fake") : NVML_ERROR_UNINITIALIZED;
}

static nvmlReturn_t cuda_version(int *v)
{
    fake_count_call();
    if (!v)
        return NVML_ERROR_INVALID_ARGUMENT;
    *v = FAKEGPU_CUDA_VERSION;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
    return cuda_version(v);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    return cuda_version(v);
}
