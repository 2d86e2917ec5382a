// The discovery subprocess: what current Ollama does in `ollama
// gpu-discover` (discover/native_probe_linux.go), on the ggml stand-ins.

package main

/*
#cgo CFLAGS: -I${SRCDIR}
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include "ggml_standin.h"

static void *sd_dlopen(const char *path, int global)
{
	return dlopen(path, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
}

static const char *sd_dlerror(void)
{
	const char *e = dlerror();
	return e ? e : "";
}

static const char *sd_file_of(void *sym)
{
	Dl_info info;
	return dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "";
}

static const struct ggml_standin_reg *sd_backend_load(void *fn, const char *path)
{
	return ((const struct ggml_standin_reg *(*)(const char *))fn)(path);
}

static const char *sd_reg_name(void *fn, const struct ggml_standin_reg *reg)
{
	return ((const char *(*)(const struct ggml_standin_reg *))fn)(reg);
}

static int sd_reg_dev_count(void *fn, const struct ggml_standin_reg *reg, int *count)
{
	return ((int (*)(const struct ggml_standin_reg *, int *))fn)(reg, count);
}

static int sd_dev_get_props(void *fn, const struct ggml_standin_reg *reg, int dev, struct ggml_standin_props *p)
{
	return ((int (*)(const struct ggml_standin_reg *, int, struct ggml_standin_props *))fn)(reg, dev, p);
}

// The driver API, with Ollama's types: CUresult and CUdevice are ints.
static int sd_cu_init(void *fn) { return ((int (*)(unsigned))fn)(0); }
static int sd_cu_int(void *fn, int *v) { return ((int (*)(int *))fn)(v); }
static int sd_cu_device_get(void *fn, int *dev, int i) { return ((int (*)(int *, int))fn)(dev, i); }
static int sd_cu_attribute(void *fn, int *v, int attr, int dev) { return ((int (*)(int *, int, int))fn)(v, attr, dev); }
static int sd_cu_string(void *fn, char *s, int len, int dev) { return ((int (*)(char *, int, int))fn)(s, len, dev); }
static int sd_cu_total_mem(void *fn, size_t *total, int dev) { return ((int (*)(size_t *, int))fn)(total, dev); }
static int sd_cu_uuid(void *fn, unsigned char *uuid, int dev) { return ((int (*)(unsigned char *, int))fn)(uuid, dev); }

static int sd_nvml_call(void *fn) { return ((int (*)(void))fn)(); }
static int sd_nvml_string(void *fn, char *s, unsigned len) { return ((int (*)(char *, unsigned))fn)(s, len); }
static int sd_nvml_uint(void *fn, unsigned *v) { return ((int (*)(unsigned *))fn)(v); }
static int sd_nvml_by_uuid(void *fn, const char *uuid, void **dev) { return ((int (*)(const char *, void **))fn)(uuid, dev); }

struct sd_nvml_memory { unsigned long long total, free, used; }; // nvmlMemory_t
static int sd_nvml_memory(void *fn, void *dev, struct sd_nvml_memory *m)
{
	return ((int (*)(void *, struct sd_nvml_memory *))fn)(dev, m);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"
)

const (
	cuAttrComputeMajor = 75
	cuAttrComputeMinor = 76
	cuAttrIntegrated   = 18
)

// One CUDA device as discovery reports it to the server.
type probeDevice struct {
	Index        int    `json:"index"`
	Name         string `json:"name"`
	PCI          string `json:"pci"`
	Total        uint64 `json:"total"`
	ComputeMajor int    `json:"compute_major"`
	ComputeMinor int    `json:"compute_minor"`
	Integrated   bool   `json:"integrated"`
	// What ggml's CUDA backend reported for the device with this PCI id.
	GGMLFree  uint64 `json:"ggml_free"`
	GGMLTotal uint64 `json:"ggml_total"`
	// The previous versions' free memory (--previous).
	UUID       string `json:"uuid,omitempty"`
	PrevFree   uint64 `json:"prev_free,omitempty"`
	PrevTotal  uint64 `json:"prev_total,omitempty"`
	PrevSource string `json:"prev_source,omitempty"`
}

type probeResult struct {
	Devices      []probeDevice `json:"devices"`
	CUDACount    int           `json:"cuda_count"`
	NVMLCount    int           `json:"nvml_count"`
	CUDADriver   int           `json:"cuda_driver"`
	NVIDIADriver string        `json:"nvidia_driver"`
	CUDALib      string        `json:"libcuda"`
	NVMLLib      string        `json:"libnvidia_ml"`
	Errors       []string      `json:"errors"`
}

type library struct {
	handle unsafe.Pointer
	name   string
}

func dlopen(path string, global bool) (library, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	mode := C.int(0)
	if global {
		mode = 1
	}
	h := C.sd_dlopen(cpath, mode)
	if h == nil {
		return library{}, fmt.Errorf("dlopen %s: %s", path, C.GoString(C.sd_dlerror()))
	}
	return library{h, path}, nil
}

func (l library) sym(name string) (unsafe.Pointer, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	p := C.dlsym(l.handle, cname)
	if p == nil {
		return nil, fmt.Errorf("%s: no %s", l.name, name)
	}
	return p, nil
}

// syms looks up every name, or says which are missing.
func (l library) syms(names ...string) (map[string]unsafe.Pointer, error) {
	out := map[string]unsafe.Pointer{}
	var missing []string
	for _, n := range names {
		p, err := l.sym(n)
		if err != nil {
			missing = append(missing, n)
		}
		out[n] = p
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s lacks %s", l.name, strings.Join(missing, ", "))
	}
	return out, nil
}

func realFile(sym unsafe.Pointer) string {
	f := C.GoString(C.sd_file_of(sym))
	if r, err := filepath.EvalSymlinks(f); err == nil {
		return r
	}
	return f
}

// probe runs discovery: ggml's backends first, then the driver directly.
func probe(libDirs []string, nvmlName string, previous bool) probeResult {
	res := probeResult{Devices: []probeDevice{}, Errors: []string{}}
	fail := func(err error) { res.Errors = append(res.Errors, err.Error()) }

	ggml, err := probeGGML(libDirs)
	if err != nil {
		fail(err)
	}
	if err := probeCUDA(&res, nvmlName); err != nil {
		fail(err)
	}
	for i := range res.Devices {
		d := &res.Devices[i]
		for _, g := range ggml {
			if strings.EqualFold(g.PCI, d.PCI) {
				d.GGMLFree, d.GGMLTotal = g.Free, g.Total
			}
		}
	}
	if previous {
		if err := previousFreeMemory(&res, nvmlName); err != nil {
			fail(err)
		}
	}
	return res
}

type ggmlDevice struct {
	PCI         string
	Free, Total uint64
}

// probeGGML loads libggml-base and libggml RTLD_GLOBAL from the first
// library directory, then each backend of the others through
// ggml_backend_load, and lists the backends' devices.
func probeGGML(libDirs []string) ([]ggmlDevice, error) {
	if len(libDirs) == 0 {
		return nil, errors.New("no library directories")
	}
	base, err := dlopen(filepath.Join(libDirs[0], "libggml-base.so"), true)
	if err != nil {
		return nil, err
	}
	ggml, err := dlopen(filepath.Join(libDirs[0], "libggml.so"), true)
	if err != nil {
		return nil, err
	}
	load, err := ggml.sym("ggml_backend_load")
	if err != nil {
		return nil, err
	}
	fn, err := base.syms("ggml_backend_reg_name", "ggml_backend_reg_dev_count", "ggml_backend_dev_get_props")
	if err != nil {
		return nil, err
	}
	var devices []ggmlDevice
	for _, path := range backendFiles(libDirs[1:]) {
		cpath := C.CString(path)
		reg := C.sd_backend_load(load, cpath)
		C.free(unsafe.Pointer(cpath))
		if reg == nil {
			continue
		}
		var count C.int
		if r := C.sd_reg_dev_count(fn["ggml_backend_reg_dev_count"], reg, &count); r != 0 {
			return devices, fmt.Errorf("%s backend: device count failed: %d", C.GoString(C.sd_reg_name(fn["ggml_backend_reg_name"], reg)), int(r))
		}
		for i := 0; i < int(count); i++ {
			var p C.struct_ggml_standin_props
			if r := C.sd_dev_get_props(fn["ggml_backend_dev_get_props"], reg, C.int(i), &p); r != 0 {
				return devices, fmt.Errorf("ggml device %d: properties failed: %d", i, int(r))
			}
			devices = append(devices, ggmlDevice{C.GoString(&p.pci[0]), uint64(p.free), uint64(p.total)})
		}
	}
	return devices, nil
}

// backendFiles: the GPU backends in dirs (Ollama's GGML_BACKEND_PATH choice).
func backendFiles(dirs []string) []string {
	var out []string
	for _, dir := range dirs {
		matches, _ := filepath.Glob(filepath.Join(dir, "libggml-*.so"))
		for _, m := range matches {
			base := filepath.Base(m)
			if !strings.HasPrefix(base, "libggml-base") && !strings.HasPrefix(base, "libggml-cpu") {
				out = append(out, m)
			}
		}
	}
	return out
}

// probeCUDA is Ollama's probeCUDADriverLinux, in its order: cuInit,
// cuDriverGetVersion, NVML's driver version, then the devices.
func probeCUDA(res *probeResult, nvmlName string) error {
	cuda, err := dlopen("libcuda.so.1", false)
	if err != nil {
		return err
	}
	cu, err := cuda.syms("cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetAttribute",
		"cuDeviceGetName", "cuDeviceTotalMem_v2", "cuDeviceGetPCIBusId")
	if err != nil {
		return err
	}
	res.CUDALib = realFile(cu["cuInit"])
	if r := C.sd_cu_init(cu["cuInit"]); r != 0 {
		return fmt.Errorf("cuInit failed: %d", int(r))
	}
	var version C.int
	if C.sd_cu_int(cu["cuDriverGetVersion"], &version) == 0 {
		res.CUDADriver = int(version)
	}
	if err := probeNVML(res, nvmlName); err != nil {
		res.Errors = append(res.Errors, err.Error())
	}
	var count C.int
	if r := C.sd_cu_int(cu["cuDeviceGetCount"], &count); r != 0 {
		return fmt.Errorf("cuDeviceGetCount failed: %d", int(r))
	}
	res.CUDACount = int(count)
	for i := 0; i < int(count); i++ {
		var dev C.int
		if C.sd_cu_device_get(cu["cuDeviceGet"], &dev, C.int(i)) != 0 {
			continue
		}
		attr := func(a int) int {
			var v C.int
			if C.sd_cu_attribute(cu["cuDeviceGetAttribute"], &v, C.int(a), dev) != 0 {
				return 0
			}
			return int(v)
		}
		var name [128]C.char
		var pci [32]C.char
		var total C.size_t
		C.sd_cu_string(cu["cuDeviceGetName"], &name[0], C.int(len(name)), dev)
		C.sd_cu_total_mem(cu["cuDeviceTotalMem_v2"], &total, dev)
		C.sd_cu_string(cu["cuDeviceGetPCIBusId"], &pci[0], C.int(len(pci)), dev)
		res.Devices = append(res.Devices, probeDevice{
			Index:        i,
			Name:         C.GoString(&name[0]),
			PCI:          strings.ToLower(C.GoString(&pci[0])),
			Total:        uint64(total),
			ComputeMajor: attr(cuAttrComputeMajor),
			ComputeMinor: attr(cuAttrComputeMinor),
			Integrated:   attr(cuAttrIntegrated) == 1,
		})
	}
	return nil
}

// probeNVML takes the driver's version as Ollama does (nvmlInit_v2,
// nvmlSystemGetDriverVersion, nvmlShutdown), and the device count, which
// Ollama does not ask for but the tests compare with CUDA's.
func probeNVML(res *probeResult, nvmlName string) error {
	nvml, err := dlopen(nvmlName, false)
	if err != nil {
		return err
	}
	fn, err := nvml.syms("nvmlInit_v2", "nvmlShutdown", "nvmlSystemGetDriverVersion", "nvmlDeviceGetCount_v2")
	if err != nil {
		return err
	}
	res.NVMLLib = realFile(fn["nvmlInit_v2"])
	if r := C.sd_nvml_call(fn["nvmlInit_v2"]); r != 0 {
		return fmt.Errorf("nvmlInit_v2 failed: %d", int(r))
	}
	defer C.sd_nvml_call(fn["nvmlShutdown"])
	var version [80]C.char
	if r := C.sd_nvml_string(fn["nvmlSystemGetDriverVersion"], &version[0], C.uint(len(version))); r != 0 {
		return fmt.Errorf("nvmlSystemGetDriverVersion failed: %d", int(r))
	}
	res.NVIDIADriver = C.GoString(&version[0])
	var count C.uint
	if r := C.sd_nvml_uint(fn["nvmlDeviceGetCount_v2"], &count); r != 0 {
		return fmt.Errorf("nvmlDeviceGetCount_v2 failed: %d", int(r))
	}
	res.NVMLCount = int(count)
	return nil
}

// previousFreeMemory is how Ollama's ggml took free memory before its
// native probe (mem_nvml.cpp): NVML by the device's UUID, or else
// cudaMemGetInfo.  There is no libcudart here, so the fallback is what
// cudaMemGetInfo calls: cuMemGetInfo_v2 in the device's primary context,
// which the CUDA backend stand-in has already asked (GGMLFree, GGMLTotal).
func previousFreeMemory(res *probeResult, nvmlName string) error {
	cuda, err := dlopen("libcuda.so.1", false)
	if err != nil {
		return err
	}
	cu, err := cuda.syms("cuDeviceGet", "cuDeviceGetUuid_v2")
	if err != nil {
		return err
	}
	nvml, nvmlErr := dlopen(nvmlName, false)
	var fn map[string]unsafe.Pointer
	if nvmlErr == nil {
		fn, nvmlErr = nvml.syms("nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetHandleByUUID", "nvmlDeviceGetMemoryInfo")
	}
	if nvmlErr == nil {
		if r := C.sd_nvml_call(fn["nvmlInit_v2"]); r != 0 {
			nvmlErr = fmt.Errorf("nvmlInit_v2 failed: %d", int(r))
		} else {
			defer C.sd_nvml_call(fn["nvmlShutdown"])
		}
	}
	if nvmlErr != nil {
		res.Errors = append(res.Errors, "previous: free memory from cuMemGetInfo: "+nvmlErr.Error())
	}
	for i := range res.Devices {
		d := &res.Devices[i]
		var dev C.int
		var uuid [16]C.uchar
		if C.sd_cu_device_get(cu["cuDeviceGet"], &dev, C.int(d.Index)) != 0 ||
			C.sd_cu_uuid(cu["cuDeviceGetUuid_v2"], &uuid[0], dev) != 0 {
			return fmt.Errorf("no UUID for CUDA device %d", d.Index)
		}
		b := C.GoBytes(unsafe.Pointer(&uuid[0]), 16)
		d.UUID = fmt.Sprintf("GPU-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
		d.PrevSource = "cuMemGetInfo"
		d.PrevFree, d.PrevTotal = d.GGMLFree, d.GGMLTotal
		if nvmlErr != nil {
			continue
		}
		cuuid := C.CString(d.UUID)
		var handle unsafe.Pointer
		var mem C.struct_sd_nvml_memory
		if C.sd_nvml_by_uuid(fn["nvmlDeviceGetHandleByUUID"], cuuid, &handle) == 0 &&
			C.sd_nvml_memory(fn["nvmlDeviceGetMemoryInfo"], handle, &mem) == 0 {
			d.PrevSource = "nvml"
			d.PrevFree, d.PrevTotal = uint64(mem.free), uint64(mem.total)
		}
		C.free(unsafe.Pointer(cuuid))
	}
	return nil
}
