package main

// GET /metrics (--metrics HOST:PORT), in Prometheus's text format: each
// vGPU a container holds, by that container (from the kubelet's pod
// resources) and by its GPU's DCGM labels (from the mediator); and the
// plugin's own counters.

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

func (p *plugin) serveMetrics(addr string) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", p.metricsHandler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
			log.Printf("metrics on %s: %v", addr, err)
		}
	}()
	return srv, nil
}

// escapeLabel escapes a label value as the text format wants: \\, \" and \n.
func escapeLabel(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

type label struct{ name, value string }

func labels(ls ...label) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.name + `="` + escapeLabel(l.value) + `"`
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// family is one metric's lines, written with its HELP and TYPE.
type family struct {
	name, help, typ string
	lines           []string
}

func (f *family) add(ls string, v uint64) {
	f.lines = append(f.lines, f.name+ls+" "+strconv.FormatUint(v, 10))
}

func (f *family) write(b *strings.Builder) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
	for _, l := range f.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
}

func (p *plugin) metricsHandler(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	p.containerMetrics(&b)
	p.counterMetrics(&b)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

func (p *plugin) counterMetrics(b *strings.Builder) {
	allocs := &family{name: "vgpu_device_plugin_allocations_total", typ: "counter",
		help: "vGPUs the plugin handed to containers (Allocate), by resource"}
	regs := &family{name: "vgpu_device_plugin_registrations_total", typ: "counter",
		help: "registrations with the kubelet, by resource"}
	p.mu.Lock()
	for _, res := range sortedKeys(p.registrations) {
		regs.add(labels(label{"resource", res}), p.registrations[res])
	}
	for _, res := range sortedKeys(p.allocations) {
		allocs.add(labels(label{"resource", res}), p.allocations[res])
	}
	p.mu.Unlock()
	allocs.write(b)
	regs.write(b)
}

// containerMetrics writes, for each device of each vGPU of a class served
// here that the kubelet says a container holds, its memory and processes.
func (p *plugin) containerMetrics(b *strings.Builder) {
	used := &family{name: "vgpu_container_memory_used_bytes", typ: "gauge",
		help: "memory the processes of the container's vGPU hold on the device, context overhead included"}
	quota := &family{name: "vgpu_container_memory_quota_bytes", typ: "gauge",
		help: "the container's vGPU's memory quota on the device (the GPU's memory when it has none)"}
	procs := &family{name: "vgpu_container_processes", typ: "gauge",
		help: "processes holding a slot of the container's vGPU"}
	defer func() {
		used.write(b)
		quota.write(b)
		procs.write(b)
	}()

	holders, err := deviceHolders(p.podResSock)
	if err != nil {
		p.say.say("metrics pod resources", "metrics: %v", err)
		return
	}
	p.say.forget("metrics pod resources")
	view, err := p.med.metricsView()
	if err != nil {
		p.say.say("metrics mediator", "metrics: %v", err)
		return
	}
	p.say.forget("metrics mediator")
	if view.gpusErr != nil {
		p.say.say("metrics gpus", "metrics: the GPUs' indexes are not known (label gpu empty): %v", view.gpusErr)
	} else {
		p.say.forget("metrics gpus")
	}
	host, _ := os.Hostname()
	p.mu.Lock()
	classOf := p.classOf
	p.mu.Unlock()

	vgpus := append([]statusVGPU(nil), view.status.VGPUs...)
	sort.Slice(vgpus, func(i, j int) bool { return nameLess(vgpus[i].Name, vgpus[j].Name) })
	for _, v := range vgpus {
		class, ok := classOf[v.Name]
		if !ok {
			continue
		}
		h, ok := holders[p.prefix+"/"+class][v.Name]
		if !ok {
			continue
		}
		for d, dev := range v.Devices {
			gpu := ""
			if g, ok := view.gpus[vgpuDevice{v.Name, uint32(d)}]; ok {
				gpu = strconv.FormatUint(uint64(g), 10)
			}
			ls := labels(label{"namespace", h.Namespace}, label{"pod", h.Pod}, label{"container", h.Container},
				label{"vgpu", v.Name}, label{"vgpu_device", strconv.Itoa(d)},
				label{"gpu", gpu}, label{"UUID", dev.UUID}, label{"modelName", dev.GPUName}, label{"Hostname", host})
			q := dev.Limit
			if q == 0 {
				q = dev.PhysicalTotal
			}
			used.add(ls, dev.Used)
			quota.add(ls, q)
			procs.add(ls, uint64(v.Processes))
		}
	}
}
