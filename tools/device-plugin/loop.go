package main

// The plugin's one loop: the mediator polled every --poll, the kubelet's
// directory looked at every second, until a signal.

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const kubeletWatchInterval = time.Second

func (p *plugin) run(stop <-chan os.Signal) {
	p.kubelet = socketID(filepath.Join(p.kubeletDir, kubeletSocket))
	p.kubeletSeen = p.kubelet != fileID{}
	p.pollMediator()
	pollTick := time.NewTicker(p.poll)
	defer pollTick.Stop()
	kubeletTick := time.NewTicker(kubeletWatchInterval)
	defer kubeletTick.Stop()
	for {
		select {
		case <-pollTick.C:
			p.pollMediator()
		case <-kubeletTick.C:
			p.watchKubelet()
		case sig := <-stop:
			log.Printf("%v: stopping", sig)
			p.shutdown()
			return
		}
	}
}

// pollMediator reads the mediator and brings the servers in step.  While
// it does not answer, the devices keep their last state; after
// failuresBeforeUnhealthy polls they are reported unhealthy.
func (p *plugin) pollMediator() {
	snap, err := p.med.poll()
	if err != nil {
		p.failures++
		p.say.say("mediator", "%v", err)
		if p.failures == failuresBeforeUnhealthy {
			log.Printf("vgpu-mediatord has not answered %d polls in a row: every device is reported Unhealthy "+
				"until it does", p.failures)
			p.reconcile()
		}
		return
	}
	if p.failures >= failuresBeforeUnhealthy {
		log.Printf("vgpu-mediatord at %s answers again", p.med.socket)
	}
	p.failures = 0
	if p.say.say("mediator", "vgpu-mediatord at %s (version %s) answers", p.med.socket, snap.status.Version) {
		p.say.forget("generation")
	}
	if p.last == nil || p.last.cluster.Generation != snap.cluster.Generation {
		p.say.say("generation", "CLUSTER generation %d: %s", snap.cluster.Generation, describe(snap.cluster))
	}
	p.last = snap
	p.reconcile()
}

// describe is a CLUSTER in a few words, for the log.
func describe(c *cluster) string {
	classes := classesOf(c, "")
	out := ""
	if bad := unnamable(c); len(bad) > 0 {
		out = fmt.Sprintf("not offered, a resource name begins and ends with a letter or a digit: %s; ",
			strings.Join(bad, ", "))
	}
	if len(classes) == 0 {
		return out + "no vGPU is made for containers (containers = N in a [vgpu.CLASS] section)"
	}
	for _, class := range sortedKeys(classes) {
		if out != "" {
			out += ", "
		}
		out += class + " ("
		for i, d := range classes[class] {
			if i > 0 {
				out += " "
			}
			out += d.ID
			if !d.Healthy {
				out += " unhealthy"
			}
		}
		out += ")"
	}
	return out
}

// watchKubelet restarts and registers again every server when the kubelet
// restarted (its socket is new: it removed every socket in the directory),
// and any server whose own socket is gone; and registers those not yet.
func (p *plugin) watchKubelet() {
	sock := filepath.Join(p.kubeletDir, kubeletSocket)
	id := socketID(sock)
	none := fileID{}
	restartAll := id != none && id != p.kubelet
	switch {
	case restartAll && p.kubeletSeen:
		log.Printf("the kubelet restarted (%s is new): serving and registering every resource again", sock)
	case restartAll:
		log.Printf("the kubelet's socket %s is there", sock)
	case id == none && p.kubelet != none:
		log.Printf("the kubelet's socket %s is gone: waiting for it", sock)
	}
	p.kubelet = id
	p.kubeletSeen = p.kubeletSeen || id != none
	for _, class := range p.classList() {
		s := p.server(class)
		if restartAll || !s.ours() {
			if !restartAll && s.srv != nil {
				log.Printf("%s: its socket %s was removed: serving on a new one", s.resource, s.socket)
			}
			if err := s.restart(); err != nil {
				p.say.say("start "+class, "%s: cannot serve on %s: %v (trying again)", s.resource, s.socket, err)
				continue
			}
			p.say.forget("start " + class)
		}
		if !s.registered {
			p.tryRegister(s)
		}
	}
}
