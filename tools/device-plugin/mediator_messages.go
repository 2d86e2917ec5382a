package main

// The mediator's answers this plugin reads, decoded and checked: STATUS,
// CLUSTER, COMPUTE (for the GPUs' indexes) and BOUND.  Sizes and limits are
// docs/reference/protocol.md's and /tmp's protocol additions (CLUSTER, BIND, BOUND).

import "fmt"

const (
	statusHeaderSize = 40
	statusVGPUSize   = 56 + maxDevs*statusDevSize
	statusDevSize    = 152
	statusProcSize   = 192
	statusMaxVGPUs   = 256
	statusMaxProcs   = 16384

	clusterHeaderSize = 16
	clusterVGPUSize   = 96
	clusterMax        = 256

	computeHeaderSize = 32
	computeDevSize    = 80
	computeProcSize   = 56
	computeMaxDevs    = statusMaxVGPUs * maxDevs
	computeMaxProcs   = 16384

	// CLUSTER record flags.
	clusterContainers = 1  // made for containers: class is its section's name
	clusterBound      = 2  // bound to a container's cgroup
	clusterUnhealthy  = 4  // one of its GPUs had a critical XID (xid), or is lost
	clusterRetired    = 8  // gone from the config
	clusterGuest      = 16 // a VM's
	clusterKnownFlags = 31

	noGPU = 0xffffffff // COMPUTE: the device's GPU is not on this machine
)

type statusDevice struct {
	UUID, GPUName                        string
	PhysicalTotal, Limit, Used, Refusals uint64
	Compute                              uint32
}

type statusVGPU struct {
	Name      string
	Flags     uint32
	Processes uint32
	Devices   []statusDevice
}

type status struct {
	Epoch, Features uint32
	Version         string
	VGPUs           []statusVGPU
	NProcs          int
}

func parseStatus(p []byte) (*status, error) {
	if len(p) < statusHeaderSize {
		return nil, fmt.Errorf("STATUS of %d bytes is shorter than its header", len(p))
	}
	nvgpus, nprocs := le.Uint32(p[0:]), le.Uint32(p[4:])
	if nvgpus > statusMaxVGPUs || nprocs > statusMaxProcs {
		return nil, fmt.Errorf("STATUS counts %d vGPUs and %d processes (at most %d and %d)",
			nvgpus, nprocs, statusMaxVGPUs, statusMaxProcs)
	}
	want := statusHeaderSize + uint64(nvgpus)*statusVGPUSize + uint64(nprocs)*statusProcSize
	if want != uint64(len(p)) {
		return nil, fmt.Errorf("STATUS of %d vGPUs and %d processes takes %d bytes, not %d", nvgpus, nprocs, want, len(p))
	}
	s := &status{Epoch: le.Uint32(p[8:]), Features: le.Uint32(p[12:]), NProcs: int(nprocs)}
	var ok bool
	if s.Version, ok = cstring(p[24:40]); !ok {
		return nil, fmt.Errorf("STATUS version string is not terminated")
	}
	q := p[statusHeaderSize:]
	for i := uint32(0); i < nvgpus; i++ {
		r := q[:statusVGPUSize]
		q = q[statusVGPUSize:]
		v := statusVGPU{Flags: le.Uint32(r[36:]), Processes: le.Uint32(r[40:])}
		name, ok := cstring(r[:nameLen])
		ndev := le.Uint32(r[32:])
		if !ok || ndev > maxDevs {
			return nil, fmt.Errorf("STATUS vGPU record %d is malformed", i)
		}
		v.Name = name
		for d := uint32(0); d < ndev; d++ {
			dr := r[56+d*statusDevSize:][:statusDevSize]
			uuid, ok1 := cstring(dr[0:48])
			model, ok2 := cstring(dr[48:112])
			dev := statusDevice{UUID: uuid, GPUName: model, PhysicalTotal: le.Uint64(dr[112:]), Limit: le.Uint64(dr[120:]),
				Used: le.Uint64(dr[128:]), Refusals: le.Uint64(dr[136:]), Compute: le.Uint32(dr[144:])}
			if !ok1 || !ok2 || dev.Compute > 100 {
				return nil, fmt.Errorf("STATUS vGPU record %d, device %d is malformed", i, d)
			}
			v.Devices = append(v.Devices, dev)
		}
		s.VGPUs = append(s.VGPUs, v)
	}
	for i := uint32(0); i < nprocs; i++ {
		r := q[:statusProcSize]
		q = q[statusProcSize:]
		_, ok1 := cstring(r[16:32])
		_, ok2 := cstring(r[32:64])
		if le.Uint32(r[8:]) >= nvgpus || !ok1 || !ok2 {
			return nil, fmt.Errorf("STATUS process record %d is malformed", i)
		}
	}
	return s, nil
}

type clusterVGPU struct {
	Name, Class      string
	Flags, XID, NDev uint32
	Memory           uint64
	Compute          uint32
}

type cluster struct {
	Generation uint64
	VGPUs      []clusterVGPU
}

func parseCluster(p []byte) (*cluster, error) {
	if len(p) < clusterHeaderSize {
		return nil, fmt.Errorf("CLUSTER of %d bytes is shorter than its header", len(p))
	}
	n := le.Uint32(p[0:])
	if n > clusterMax {
		return nil, fmt.Errorf("CLUSTER counts %d vGPUs (at most %d)", n, clusterMax)
	}
	if want := clusterHeaderSize + uint64(n)*clusterVGPUSize; want != uint64(len(p)) {
		return nil, fmt.Errorf("CLUSTER of %d vGPUs takes %d bytes, not %d", n, want, len(p))
	}
	c := &cluster{Generation: le.Uint64(p[8:])}
	q := p[clusterHeaderSize:]
	for i := uint32(0); i < n; i++ {
		r := q[:clusterVGPUSize]
		q = q[clusterVGPUSize:]
		name, ok1 := cstring(r[0:32])
		class, ok2 := cstring(r[32:64])
		v := clusterVGPU{Name: name, Class: class, Flags: le.Uint32(r[64:]), XID: le.Uint32(r[68:]),
			NDev: le.Uint32(r[72:]), Memory: le.Uint64(r[80:]), Compute: le.Uint32(r[88:])}
		if !ok1 || !ok2 || v.NDev > maxDevs || v.Compute > 100 || v.Flags&^clusterKnownFlags != 0 {
			return nil, fmt.Errorf("CLUSTER record %d is malformed", i)
		}
		c.VGPUs = append(c.VGPUs, v)
	}
	return c, nil
}

// parseComputeGPUs reads COMPUTE for what this plugin takes of it: each vGPU
// device's GPU, as nvidia-smi numbers it (absent: not on this machine).
func parseComputeGPUs(p []byte) (map[vgpuDevice]uint32, error) {
	if len(p) < computeHeaderSize {
		return nil, fmt.Errorf("COMPUTE of %d bytes is shorter than its header", len(p))
	}
	ndevs, nprocs := le.Uint32(p[0:]), le.Uint32(p[4:])
	if ndevs > computeMaxDevs || nprocs > computeMaxProcs {
		return nil, fmt.Errorf("COMPUTE counts %d devices and %d processes (at most %d and %d)",
			ndevs, nprocs, computeMaxDevs, computeMaxProcs)
	}
	want := computeHeaderSize + uint64(ndevs)*computeDevSize + uint64(nprocs)*computeProcSize
	if want != uint64(len(p)) {
		return nil, fmt.Errorf("COMPUTE of %d devices and %d processes takes %d bytes, not %d", ndevs, nprocs, want, len(p))
	}
	gpus := make(map[vgpuDevice]uint32)
	q := p[computeHeaderSize:]
	for i := uint32(0); i < ndevs; i++ {
		r := q[:computeDevSize]
		q = q[computeDevSize:]
		name, ok := cstring(r[0:32])
		dev, gpu := le.Uint32(r[32:]), le.Uint32(r[36:])
		if !ok || dev >= maxDevs || le.Uint32(r[40:]) > 100 || le.Uint32(r[44:]) > 2 ||
			le.Uint32(r[52:]) > 1000 || le.Uint32(r[56:]) > 1000 {
			return nil, fmt.Errorf("COMPUTE device record %d is malformed", i)
		}
		if gpu != noGPU {
			gpus[vgpuDevice{name, dev}] = gpu
		}
	}
	for i := uint32(0); i < nprocs; i++ {
		r := q[:computeProcSize]
		q = q[computeProcSize:]
		if _, ok := cstring(r[0:32]); !ok || le.Uint32(r[36:]) >= maxDevs || le.Uint32(r[48:]) > 1000 {
			return nil, fmt.Errorf("COMPUTE process record %d is malformed", i)
		}
	}
	return gpus, nil
}

// vgpuDevice names one device of a vGPU.
type vgpuDevice struct {
	VGPU   string
	Device uint32
}

// bindRequest is BIND's payload: vgpu to pid's cgroup (0: to no one yet).
func bindRequest(vgpu string, pid uint32) ([]byte, error) {
	b := make([]byte, bindSize)
	if err := putCString(b[:nameLen], vgpu); err != nil {
		return nil, err
	}
	le.PutUint32(b[nameLen:], pid)
	return b, nil
}

// parseBound checks BOUND and gives its vGPU and cgroup.
func parseBound(p []byte) (string, string, error) {
	if len(p) != boundSize {
		return "", "", fmt.Errorf("BOUND has %d payload bytes, want %d", len(p), boundSize)
	}
	vgpu, ok1 := cstring(p[:nameLen])
	cg, ok2 := cstring(p[nameLen:])
	if !ok1 || !ok2 {
		return "", "", fmt.Errorf("malformed BOUND")
	}
	return vgpu, cg, nil
}
