/*
 * What the tests count through the exported helpers fakegpu_calls() and
 * fakegpu_launches() (../README.md): entry-point calls and launches.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

/* Owned by this file, atomic. */
static unsigned long g_calls;
static unsigned long g_launches;

unsigned long fakegpu_calls(void);
unsigned long fakegpu_launches(void);

unsigned long fakegpu_calls(void)
{
    return __atomic_load_n(&g_calls, __ATOMIC_RELAXED);
}

unsigned long fakegpu_launches(void)
{
    return __atomic_load_n(&g_launches, __ATOMIC_RELAXED);
}

void fake_count_call(void)
{
    __atomic_add_fetch(&g_calls, 1, __ATOMIC_RELAXED);
}

void fake_count_launch(void)
{
    __atomic_add_fetch(&g_launches, 1, __ATOMIC_RELAXED);
}
