/*
 * The driver-API conformance client's families (one file each) and what
 * they share: the driver, loaded as applications load it
 * (dlopen("libcuda.so.1"), which is vgpu), and lines printed per call so
 * that a run on a local driver and a guest's run can be compared
 * (test/remote/remote.sh, "conformance-matches-a-local-run").
 */
#pragma once

#include <cuda.h>
#include <stdio.h>

/* The driver (main.c). */
extern void *driver;
/* Its function name; a missing one ends the run. */
void *sym(const char *name);
#define F(name) ((__typeof__(&name))sym(#name))

/* The family that runs, named when a call fails. */
extern const char *current_case;
/* 0 while a call may fail (its code is printed and compared). */
extern int strict;

/* Prints "WHAT: CODE"; a failure ends the run unless strict is 0. */
#define SHOW(what, call)                                                                                               \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        printf("%s: %d\n", what, (int)r_);                                                                             \
        if (r_ != CUDA_SUCCESS && strict)                                                                              \
            conformance_failed(what);                                                                                  \
    } while (0)
/* A call expected to fail: its code printed, the run going on. */
#define TRY(what, call)                                                                                                \
    do {                                                                                                               \
        strict = 0;                                                                                                    \
        SHOW(what, call);                                                                                              \
        strict = 1;                                                                                                    \
    } while (0)
_Noreturn void conformance_failed(const char *what);

/* The fake GPU's built-in kernel name (add_one(float *x, int n),
 * fill_u32(unsigned *x, unsigned v, int n)), of a module loaded once in
 * the current context. */
CUfunction conformance_kernel(const char *name);

/* The families, each run with device 0's primary context current. */
void conformance_legacy(void);
void conformance_streams(void);
void conformance_memory(void);
void conformance_queries(void);
void conformance_graphs(void);
void conformance_threads(void);
