// The load-order matrix's Go consumer: a cgo program that dlopens the driver
// as Ollama's GPU discovery does, and checks what it saw with the same probe
// as the C consumers (test/loadorder/probe.h): TEST_CUDA_LIB (default
// libcuda.so.1), TEST_NVML_LIB where set, TEST_DRIVER_FIRST, TEST_EXPECT_*.
package main

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include "test/loadorder/probe.h"

static int run(const char *cuda, const char *nvml)
{
	probe_open_driver_first();
	void *h = dlopen(cuda, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "FAIL dlopen(%s): %s\n", cuda, dlerror());
		return 1;
	}
	struct probe_cuda f = probe_cuda_from(h);
	probe_cuda(&f);
	if (nvml && *nvml) {
		void *n = dlopen(nvml, RTLD_NOW);
		if (!n) {
			fprintf(stderr, "FAIL dlopen(%s): %s\n", nvml, dlerror());
			return 1;
		}
		probe_nvml(n);
	}
	fflush(stdout);
	return probe_failures;
}
*/
import "C"

import (
	"fmt"
	"os"
)

func main() {
	cuda := os.Getenv("TEST_CUDA_LIB")
	if cuda == "" {
		cuda = "libcuda.so.1"
	}
	if failed := C.run(C.CString(cuda), C.CString(os.Getenv("TEST_NVML_LIB"))); failed != 0 {
		fmt.Fprintf(os.Stderr, "FAIL %d check(s) of the load order failed\n", int(failed))
		os.Exit(1)
	}
	fmt.Println("ok - cgo")
}
