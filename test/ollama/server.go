// ollama-standin: an Ollama-style server for vgpu's tests.  It discovers
// GPUs as current Ollama does, in a subprocess of itself, and starts its
// runner both ways servers do: with its own environment plus its library
// directories (Ollama, llm/llama_server.go), and with an environment built
// from scratch (other servers).
//
//	ollama-standin serve --lib-dir DIR --lib-dir GPUDIR --runner PATH [--previous] [--nvml NAME] [--layer-mib N]
//	ollama-standin gpu-discover --lib-dir DIR --lib-dir GPUDIR [--previous] [--nvml NAME]
//
// serve prints lines of KEY=VALUE words (strings quoted), each starting
// with what it is about: "discover" (each pass of discovery), "server"
// (what it chose and how its runners ended); the runners print "runner"
// lines themselves.  gpu-discover prints JSON, as Ollama's does.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// This server's GPU libraries are a CUDA 13 build; CUDA 13 needs an NVIDIA
// driver of branch 580 or later (Ollama's discover/cuda_compat.go checks
// its builds the same way).
const minDriverMajor = 580

type dirList []string

func (d *dirList) String() string     { return strings.Join(*d, ":") }
func (d *dirList) Set(v string) error { *d = append(*d, v); return nil }

type options struct {
	libDirs  dirList
	runner   string
	nvml     string
	previous bool
	layerMiB int
}

func parse(args []string, discovery bool) options {
	var o options
	fs := flag.NewFlagSet(args[0], flag.ExitOnError)
	fs.Var(&o.libDirs, "lib-dir", "a library directory: ggml's first, then each GPU variant's")
	fs.StringVar(&o.nvml, "nvml", "libnvidia-ml.so.1", "the NVML library to dlopen")
	fs.BoolVar(&o.previous, "previous", false, "also take free memory as previous versions did (NVML by UUID)")
	if !discovery {
		fs.StringVar(&o.runner, "runner", "", "the runner program")
		fs.IntVar(&o.layerMiB, "layer-mib", 256, "the runner's layer size")
	}
	fs.Parse(args[1:])
	if len(o.libDirs) < 2 || (!discovery && o.runner == "") {
		runner := " --runner PATH [--layer-mib N]"
		if discovery {
			runner = ""
		}
		fmt.Fprintf(os.Stderr, "usage: %s %s --lib-dir DIR --lib-dir GPUDIR%s [--previous] [--nvml NAME]\n",
			filepath.Base(os.Args[0]), args[0], runner)
		os.Exit(2)
	}
	return o
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ollama-standin serve|gpu-discover ... (see the source)")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "gpu-discover":
		o := parse(os.Args[1:], true)
		json.NewEncoder(os.Stdout).Encode(probe(o.libDirs, o.nvml, o.previous))
	case "serve":
		os.Exit(serve(parse(os.Args[1:], false)))
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

// q quotes a string value for the KEY=VALUE lines.
func q(s string) string { return strconv.Quote(s) }

func serve(o options) int {
	first, err := discover(o, nil)
	if err != nil {
		fmt.Printf("server library=cpu reason=%s\n", q("discovery failed: "+err.Error()))
		return 1
	}
	fmt.Printf("discover pass=1 cuda_count=%d nvml_count=%d cuda_driver=%d nvidia_driver=%s libcuda=%s libnvidia_ml=%s\n",
		first.CUDACount, first.NVMLCount, first.CUDADriver, q(first.NVIDIADriver), q(first.CUDALib), q(first.NVMLLib))
	for _, d := range first.Devices {
		fmt.Printf("discover pass=1 index=%d name=%s pci=%s total=%d ggml_free=%d ggml_total=%d cc=%d.%d integrated=%t",
			d.Index, q(d.Name), d.PCI, d.Total, d.GGMLFree, d.GGMLTotal, d.ComputeMajor, d.ComputeMinor, d.Integrated)
		if o.previous {
			fmt.Printf(" uuid=%s prev_free=%d prev_total=%d prev_source=%s", d.UUID, d.PrevFree, d.PrevTotal, d.PrevSource)
		}
		fmt.Println()
	}

	gpus, reason := chooseGPUs(o, first)
	if len(gpus) == 0 {
		fmt.Printf("server library=cpu reason=%s\n", q(reason))
		return 0
	}
	fmt.Printf("server library=cuda gpus=%s\n", strings.Join(gpus, ","))

	status := 0
	for _, mode := range []string{"ollama", "scratch"} {
		cmd := exec.Command(o.runner, "--label", mode, "--layer-mib", strconv.Itoa(o.layerMiB))
		cmd.Env = runnerEnv(mode, o.libDirs, map[string]string{"CUDA_VISIBLE_DEVICES": strings.Join(gpus, ",")})
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		err := cmd.Run()
		code := 0
		if err != nil {
			code = -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			status = 1
		}
		fmt.Printf("server runner=%s exit=%d\n", mode, code)
	}
	return status
}

// chooseGPUs keeps the devices Ollama would: none if the driver is too old
// for this build; of the others, those that report memory and that a
// second discovery, shown only that device, still finds.
func chooseGPUs(o options, first probeResult) ([]string, string) {
	for _, e := range first.Errors {
		fmt.Printf("discover error=%s\n", q(e))
	}
	if len(first.Devices) == 0 {
		return nil, "no CUDA devices"
	}
	if major, err := strconv.Atoi(strings.SplitN(first.NVIDIADriver, ".", 2)[0]); err != nil {
		fmt.Printf("server warning=%s\n", q("could not verify NVIDIA driver compatibility: driver version "+q(first.NVIDIADriver)))
	} else if major < minDriverMajor {
		return nil, fmt.Sprintf("NVIDIA driver %s is too old for CUDA 13; %d or newer is needed", first.NVIDIADriver, minDriverMajor)
	}
	var gpus []string
	reason := ""
	for _, d := range first.Devices {
		id := strconv.Itoa(d.Index)
		if d.Total == 0 {
			reason = fmt.Sprintf("CUDA device %s reports 0 MiB", id)
			continue
		}
		second, err := discover(o, map[string]string{"CUDA_VISIBLE_DEVICES": id})
		if err != nil {
			reason = fmt.Sprintf("CUDA device %s: second discovery failed: %v", id, err)
			continue
		}
		for _, e := range second.Errors {
			fmt.Printf("discover pass=2 id=%s error=%s\n", id, q(e))
		}
		pci, total := "none", uint64(0)
		if len(second.Devices) > 0 {
			pci, total = second.Devices[0].PCI, second.Devices[0].Total
		}
		fmt.Printf("discover pass=2 id=%s count=%d pci=%s total=%d\n", id, len(second.Devices), pci, total)
		if len(second.Devices) != 1 || total == 0 {
			reason = fmt.Sprintf("CUDA device %s did not initialise alone", id)
			continue
		}
		gpus = append(gpus, id)
	}
	return gpus, reason
}

// discover runs discovery in a subprocess of this program, with the
// environment Ollama gives it (the runners' own) plus extra.
func discover(o options, extra map[string]string) (probeResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return probeResult{}, err
	}
	args := []string{"gpu-discover", "--nvml", o.nvml}
	for _, d := range o.libDirs {
		args = append(args, "--lib-dir", d)
	}
	if o.previous {
		args = append(args, "--previous")
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = runnerEnv("ollama", o.libDirs, extra)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	os.Stderr.Write(stderr.Bytes())
	if err != nil {
		return probeResult{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var res probeResult
	if err := json.Unmarshal(out, &res); err != nil {
		return probeResult{}, fmt.Errorf("discovery printed %q: %v", out, err)
	}
	return res, nil
}

// runnerEnv builds a child's environment.  "ollama": this process's own,
// with the library directories first on LD_LIBRARY_PATH and
// OLLAMA_LIBRARY_PATH and GGML_BACKEND_PATH set, as Ollama's
// SetupLlamaServerCommandEnv does: whatever LD_PRELOAD or VGPU_* the server
// had, the child has.  "scratch": only what the server chooses to pass,
// as servers that build their workers' environment do: LD_PRELOAD, the
// server's own LD_LIBRARY_PATH and every VGPU_* setting are gone.
func runnerEnv(mode string, libDirs []string, extra map[string]string) []string {
	set := map[string]string{
		"OLLAMA_LIBRARY_PATH": strings.Join(libDirs, ":"),
		"LD_LIBRARY_PATH":     strings.Join(libDirs, ":"),
	}
	if backends := backendFiles(libDirs[1:]); len(backends) > 0 {
		set["GGML_BACKEND_PATH"] = backends[0]
	}
	for k, v := range extra {
		set[k] = v
	}
	var env []string
	if mode == "ollama" {
		if old := os.Getenv("LD_LIBRARY_PATH"); old != "" {
			set["LD_LIBRARY_PATH"] += ":" + old
		}
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); set[k] == "" {
				env = append(env, kv)
			}
		}
	} else {
		// The sanitizers' settings are the test run's, not the server's
		// choice: a sanitized build's children need them to start at all.
		for _, k := range []string{"PATH", "HOME", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"} {
			if v, ok := os.LookupEnv(k); ok {
				set[k] = v
			}
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}
