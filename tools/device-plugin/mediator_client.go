package main

// Asking vgpu-mediatord over its socket: one connection for a few requests,
// each answered in order, with a deadline so that a stalled mediator never
// stalls the plugin.

import (
	"fmt"
	"net"
	"time"

	"vgpu.dev/protocol"
)

const mediatorTimeout = 5 * time.Second

type mediator struct {
	socket string
}

type mediatorConn struct {
	m *mediator
	c net.Conn
}

func (m *mediator) dial() (*mediatorConn, error) {
	c, err := net.DialTimeout("unix", m.socket, mediatorTimeout)
	if err != nil {
		return nil, fmt.Errorf("vgpu-mediatord at %s: %w", m.socket, err)
	}
	return &mediatorConn{m: m, c: c}, nil
}

func (mc *mediatorConn) Close() { mc.c.Close() }

// ask sends typ with payload and reads the answer of type want.
func (mc *mediatorConn) ask(typ uint16, payload []byte, want uint16) ([]byte, error) {
	if err := mc.c.SetDeadline(time.Now().Add(mediatorTimeout)); err != nil {
		return nil, err
	}
	if _, err := mc.c.Write(frame(typ, payload)); err != nil {
		return nil, fmt.Errorf("vgpu-mediatord at %s: %w", mc.m.socket, err)
	}
	p, err := readFrame(mc.c, want)
	if err != nil {
		return nil, fmt.Errorf("vgpu-mediatord at %s: %w", mc.m.socket, err)
	}
	return p, nil
}

// request asks one request without a payload and parses its answer.
func request[T any](mc *mediatorConn, req, answer uint16, parse func([]byte) (T, error)) (T, error) {
	var none T
	p, err := mc.ask(req, nil, answer)
	if err != nil {
		return none, err
	}
	v, err := parse(p)
	if err != nil {
		return none, fmt.Errorf("vgpu-mediatord at %s: %w", mc.m.socket, err)
	}
	return v, nil
}

func (mc *mediatorConn) status() (*status, error) {
	return request(mc, protocol.VGPU_MSG_STATUS_REQUEST, protocol.VGPU_MSG_STATUS, parseStatus)
}

// cluster asks CLUSTER of a mediator whose STATUS said it answers it.
func (mc *mediatorConn) cluster() (*cluster, error) {
	return request(mc, protocol.VGPU_MSG_CLUSTER_REQUEST, protocol.VGPU_MSG_CLUSTER, parseCluster)
}

// computeGPUs asks COMPUTE of a mediator whose STATUS said it answers it.
func (mc *mediatorConn) computeGPUs() (map[vgpuDevice]uint32, error) {
	return request(mc, protocol.VGPU_MSG_COMPUTE_REQUEST, protocol.VGPU_MSG_COMPUTE, parseComputeGPUs)
}

// snapshot is what one poll of the mediator read.
type snapshot struct {
	status  *status
	cluster *cluster
}

// poll reads STATUS and CLUSTER over one connection.
func (m *mediator) poll() (*snapshot, error) {
	mc, err := m.dial()
	if err != nil {
		return nil, err
	}
	defer mc.Close()
	s, err := mc.status()
	if err != nil {
		return nil, err
	}
	if s.Features&protocol.VGPU_STATUS_HAS_CLUSTER == 0 {
		return nil, fmt.Errorf("vgpu-mediatord at %s (version %s) does not answer CLUSTER_REQUEST and BIND: "+
			"it is older than this plugin; upgrade it", m.socket, s.Version)
	}
	c, err := mc.cluster()
	if err != nil {
		return nil, err
	}
	return &snapshot{status: s, cluster: c}, nil
}

// bind sends BIND(vgpu, pid) and returns the cgroup BOUND names.
func (m *mediator) bind(vgpu string, pid uint32) (string, error) {
	req, err := bindRequest(vgpu, pid)
	if err != nil {
		return "", err
	}
	mc, err := m.dial()
	if err != nil {
		return "", err
	}
	defer mc.Close()
	p, err := mc.ask(protocol.VGPU_MSG_BIND, req, protocol.VGPU_MSG_BOUND)
	if err != nil {
		return "", err
	}
	name, cg, err := parseBound(p)
	if err != nil {
		return "", fmt.Errorf("vgpu-mediatord at %s: %w", m.socket, err)
	}
	if name != vgpu {
		return "", fmt.Errorf("vgpu-mediatord at %s answered BIND of %s with BOUND of %s", m.socket, vgpu, name)
	}
	return cg, nil
}

// scrapeView is what a scrape reads of the mediator.
type scrapeView struct {
	status  *status
	gpus    map[vgpuDevice]uint32 // each vGPU device's GPU, where COMPUTE says
	gpusErr error                 // why COMPUTE did not say
}

// metricsView reads STATUS, and COMPUTE where the mediator has it: the
// vGPUs' use and their devices' GPUs.
func (m *mediator) metricsView() (*scrapeView, error) {
	mc, err := m.dial()
	if err != nil {
		return nil, err
	}
	defer mc.Close()
	s, err := mc.status()
	if err != nil {
		return nil, err
	}
	v := &scrapeView{status: s, gpus: map[vgpuDevice]uint32{}}
	if s.Features&protocol.VGPU_STATUS_HAS_COMPUTE != 0 {
		if g, err := mc.computeGPUs(); err != nil {
			v.gpusErr = err
		} else {
			v.gpus = g
		}
	}
	return v, nil
}
