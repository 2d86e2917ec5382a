// vgpu-device-plugin: a Kubernetes device plugin for vgpu-mediatord's
// vGPUs made for containers.  Each [vgpu.CLASS] section with containers = N
// is the extended resource PREFIX/CLASS, whose devices are the vGPUs
// CLASS-0 ... CLASS-(N-1); a container given one gets it as the CDI device
// KIND=NAME (vgpu-setup cdi writes those), and the mediator binds the vGPU
// to the container's cgroup when it starts (vgpu-cdi-hook).
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	kubeletDir := flag.String("kubelet-dir", "/var/lib/kubelet/device-plugins",
		"the kubelet's device plugin directory (its kubelet.sock, and this plugin's sockets)")
	podRes := flag.String("pod-resources-socket", "/var/lib/kubelet/pod-resources/kubelet.sock",
		"the kubelet's pod resources socket (which container holds which vGPU, for --metrics)")
	medSock := flag.String("mediator-socket", "/run/vgpu/mediator.sock", "vgpu-mediatord's socket")
	metrics := flag.String("metrics", "", "HOST:PORT to serve Prometheus metrics on (default off)")
	poll := flag.Duration("poll", 2*time.Second, "how often to ask the mediator what changed")
	cdiKind := flag.String("cdi-kind", "vgpu.dev/vgpu", "the CDI kind of the vGPUs' devices (VENDOR/CLASS)")
	prefix := flag.String("resource-prefix", "vgpu.dev", "the resources' domain: each class is PREFIX/CLASS")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [options]\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("vgpu-device-plugin: ")
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *poll < 100*time.Millisecond {
		log.Fatalf("--poll %v: at least 100ms", *poll)
	}
	if !strings.Contains(*cdiKind, "/") || strings.ContainsAny(*cdiKind, "=") {
		log.Fatalf("--cdi-kind %q: VENDOR/CLASS, such as vgpu.dev/vgpu", *cdiKind)
	}
	if *prefix == "" || strings.Contains(*prefix, "/") {
		log.Fatalf("--resource-prefix %q: a domain, such as vgpu.dev", *prefix)
	}
	if fi, err := os.Stat(*kubeletDir); err != nil || !fi.IsDir() {
		log.Fatalf("--kubelet-dir %s is not a directory", *kubeletDir)
	}

	p := newPlugin(&mediator{socket: *medSock}, *kubeletDir, *podRes, *cdiKind, *prefix, *poll)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	if *metrics != "" {
		srv, err := p.serveMetrics(*metrics)
		if err != nil {
			log.Fatal(err)
		}
		defer srv.Close()
		log.Printf("metrics on http://%s/metrics", *metrics)
	}
	log.Printf("serving the classes of vgpu-mediatord at %s to the kubelet in %s", *medSock, *kubeletDir)
	p.run(stop)
}
