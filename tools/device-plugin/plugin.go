package main

// The plugin: one server per class the mediator has, kept in step with
// what it says (reconcile), and the counters the metrics show.

import (
	"log"
	"sort"
	"sync"
	"time"
)

// failuresBeforeUnhealthy: polls in a row that may fail before the
// devices are reported unhealthy.
const failuresBeforeUnhealthy = 3

type plugin struct {
	med        *mediator
	kubeletDir string
	podResSock string
	cdiKind    string
	prefix     string
	poll       time.Duration
	say        *logOnce

	// The loop's alone.
	last        *snapshot // the latest answer; kept while the mediator does not answer
	failures    int       // polls failed in a row
	kubelet     fileID    // kubelet.sock when last looked at (zero: none)
	kubeletSeen bool      // it was there once: its next one is a restart

	mu            sync.Mutex // guards what follows, which the metrics and gRPC read too
	servers       map[string]*classServer
	classOf       map[string]string // vGPU name -> class, from the latest CLUSTER
	allocations   map[string]uint64 // by resource
	registrations map[string]uint64
}

func newPlugin(med *mediator, kubeletDir, podResSock, cdiKind, prefix string, poll time.Duration) *plugin {
	return &plugin{
		med: med, kubeletDir: kubeletDir, podResSock: podResSock, cdiKind: cdiKind, prefix: prefix, poll: poll,
		say: newLogOnce(), servers: map[string]*classServer{}, classOf: map[string]string{},
		allocations: map[string]uint64{}, registrations: map[string]uint64{},
	}
}

func (p *plugin) countAllocation(resource string) {
	p.mu.Lock()
	p.allocations[resource]++
	p.mu.Unlock()
}

func (p *plugin) countRegistration(resource string) {
	p.mu.Lock()
	p.registrations[resource]++
	p.mu.Unlock()
}

// server is the class's server, or nil.
func (p *plugin) server(class string) *classServer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.servers[class]
}

// classList is the classes served, in order.
func (p *plugin) classList() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for c := range p.servers {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// reconcile gives each class of the latest CLUSTER a server with its
// devices, and ends the servers of classes gone.
func (p *plugin) reconcile() {
	unreachable := ""
	if p.failures >= failuresBeforeUnhealthy {
		unreachable = "vgpu-mediatord at " + p.med.socket + " does not answer"
	}
	var generation uint64
	var classes map[string][]device
	classOf := map[string]string{}
	if p.last != nil {
		generation = p.last.cluster.Generation
		classes = classesOf(p.last.cluster, unreachable)
		for class, ds := range classes {
			for _, d := range ds {
				classOf[d.ID] = class
			}
		}
	}
	p.mu.Lock()
	p.classOf = classOf
	p.mu.Unlock()

	for _, class := range p.classList() {
		if _, ok := classes[class]; ok {
			continue
		}
		s := p.server(class)
		log.Printf("%s: class %s is gone from the mediator: ending its device plugin", s.resource, class)
		s.end()
		p.mu.Lock()
		delete(p.servers, class)
		p.mu.Unlock()
	}
	names := make([]string, 0, len(classes))
	for class := range classes {
		names = append(names, class)
	}
	sort.Strings(names)
	for _, class := range names {
		s := p.server(class)
		if s == nil {
			s = newClassServer(p, class)
			s.setDevices(classes[class], generation)
			p.mu.Lock()
			p.servers[class] = s
			p.mu.Unlock()
			log.Printf("%s: class %s has %d vGPUs: serving it on %s", s.resource, class, len(classes[class]), s.socket)
			if err := s.start(); err != nil {
				p.say.say("start "+class, "%s: cannot serve on %s: %v (trying again)", s.resource, s.socket, err)
				continue
			}
			p.tryRegister(s)
			continue
		}
		s.setDevices(classes[class], generation)
	}
}

// tryRegister registers s where the kubelet's socket is there; a failure is
// logged once, and tried again by the kubelet watch.
func (p *plugin) tryRegister(s *classServer) {
	if p.kubelet == (fileID{}) {
		p.say.say("register "+s.class, "%s: no kubelet socket in %s yet: registering when it comes", s.resource, p.kubeletDir)
		return
	}
	if err := s.register(); err != nil {
		p.say.say("register "+s.class, "%s: %v (trying again)", s.resource, err)
		return
	}
	p.say.forget("register " + s.class)
	log.Printf("%s: registered with the kubelet (endpoint %s)", s.resource, s.endpoint)
}

// shutdown stops every server and removes its socket.
func (p *plugin) shutdown() {
	for _, class := range p.classList() {
		s := p.server(class)
		s.stop()
	}
}
