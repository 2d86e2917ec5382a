package main

// The mediator's answers this plugin reads, decoded and checked as
// common/contract/protocol/protocol.c checks them: STATUS, CLUSTER, COMPUTE
// (for the GPUs' indexes) and BOUND.  Every size, offset, limit and flag is
// the generated package protocol's, from protocol.h (and MED_XID_LOST from
// the mediator's health/xid.h); TestNoLayoutLiterals keeps numbers out of
// this file.

import (
	"fmt"

	"vgpu.dev/protocol"
)

// Units, not layout: protocol.h names the fields' units in words.
const (
	percent  = 100  // a compute share: 1-100
	permille = 1000 // a measured share of an interval: 0-1000
	// COMPUTE's gpu of a device whose GPU is not on this machine (protocol.h
	// says 0xffffffff in words; the mediator writes UINT32_MAX).
	noGPU = 0xffffffff
)

// clusterKnownFlags are the CLUSTER record flags this plugin knows; one
// more is a malformed record (protocol.c rejects it too).
const clusterKnownFlags = protocol.VGPU_CLUSTER_CONTAINERS | protocol.VGPU_CLUSTER_BOUND |
	protocol.VGPU_CLUSTER_UNHEALTHY | protocol.VGPU_CLUSTER_RETIRED | protocol.VGPU_CLUSTER_GUEST

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
	if len(p) < protocol.StatusHeaderSize {
		return nil, fmt.Errorf("STATUS of %d bytes is shorter than its header", len(p))
	}
	nvgpus, nprocs := protocol.StatusHeaderNvgpus(p), protocol.StatusHeaderNprocs(p)
	if nvgpus > protocol.VGPU_STATUS_MAX_VGPUS || nprocs > protocol.VGPU_STATUS_MAX_PROCS {
		return nil, fmt.Errorf("STATUS counts %d vGPUs and %d processes (at most %d and %d)",
			nvgpus, nprocs, protocol.VGPU_STATUS_MAX_VGPUS, protocol.VGPU_STATUS_MAX_PROCS)
	}
	want := protocol.StatusHeaderSize + uint64(nvgpus)*protocol.StatusVGPUSize +
		uint64(nprocs)*protocol.StatusProcSize
	if want != uint64(len(p)) {
		return nil, fmt.Errorf("STATUS of %d vGPUs and %d processes takes %d bytes, not %d", nvgpus, nprocs, want, len(p))
	}
	s := &status{Epoch: protocol.StatusHeaderEpoch(p), Features: protocol.StatusHeaderFeatures(p), NProcs: int(nprocs)}
	var ok bool
	if s.Version, ok = cstring(protocol.StatusHeaderVersion(p)); !ok {
		return nil, fmt.Errorf("STATUS version string is not terminated")
	}
	q := p[protocol.StatusHeaderSize:]
	for i := uint32(0); i < nvgpus; i++ {
		r := q[:protocol.StatusVGPUSize]
		q = q[protocol.StatusVGPUSize:]
		v := statusVGPU{Flags: protocol.StatusVGPUFlags(r), Processes: protocol.StatusVGPUProcesses(r)}
		name, ok := cstring(protocol.StatusVGPUName(r))
		ndev := protocol.StatusVGPUNdev(r)
		if !ok || ndev > protocol.StatusVGPUDevLen {
			return nil, fmt.Errorf("STATUS vGPU record %d is malformed", i)
		}
		v.Name = name
		for d := uint32(0); d < ndev; d++ {
			dr := protocol.StatusVGPUDev(r, d)
			uuid, ok1 := cstring(protocol.StatusDeviceUUID(dr))
			model, ok2 := cstring(protocol.StatusDeviceGPUName(dr))
			dev := statusDevice{UUID: uuid, GPUName: model, PhysicalTotal: protocol.StatusDevicePhysicalTotal(dr),
				Limit: protocol.StatusDeviceLimit(dr), Used: protocol.StatusDeviceUsed(dr),
				Refusals: protocol.StatusDeviceRefusals(dr), Compute: protocol.StatusDeviceCompute(dr)}
			if !ok1 || !ok2 || dev.Compute > percent {
				return nil, fmt.Errorf("STATUS vGPU record %d, device %d is malformed", i, d)
			}
			v.Devices = append(v.Devices, dev)
		}
		s.VGPUs = append(s.VGPUs, v)
	}
	for i := uint32(0); i < nprocs; i++ {
		r := q[:protocol.StatusProcSize]
		q = q[protocol.StatusProcSize:]
		_, ok1 := cstring(protocol.StatusProcComm(r))
		_, ok2 := cstring(protocol.StatusProcUser(r))
		if protocol.StatusProcVGPU(r) >= nvgpus || !ok1 || !ok2 {
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
	if len(p) < protocol.ClusterHeaderSize {
		return nil, fmt.Errorf("CLUSTER of %d bytes is shorter than its header", len(p))
	}
	n := protocol.ClusterHeaderN(p)
	if n > protocol.VGPU_CLUSTER_MAX {
		return nil, fmt.Errorf("CLUSTER counts %d vGPUs (at most %d)", n, protocol.VGPU_CLUSTER_MAX)
	}
	if want := protocol.ClusterHeaderSize + uint64(n)*protocol.ClusterVGPUSize; want != uint64(len(p)) {
		return nil, fmt.Errorf("CLUSTER of %d vGPUs takes %d bytes, not %d", n, want, len(p))
	}
	c := &cluster{Generation: protocol.ClusterHeaderGeneration(p)}
	q := p[protocol.ClusterHeaderSize:]
	for i := uint32(0); i < n; i++ {
		r := q[:protocol.ClusterVGPUSize]
		q = q[protocol.ClusterVGPUSize:]
		name, ok1 := cstring(protocol.ClusterVGPUName(r))
		class, ok2 := cstring(protocol.ClusterVGPUCls(r))
		v := clusterVGPU{Name: name, Class: class, Flags: protocol.ClusterVGPUFlags(r), XID: protocol.ClusterVGPUXID(r),
			NDev: protocol.ClusterVGPUNdev(r), Memory: protocol.ClusterVGPUMemory(r),
			Compute: protocol.ClusterVGPUCompute(r)}
		if !ok1 || !ok2 || v.NDev > protocol.VGPU_STATUS_MAX_DEVICES || v.Compute > percent ||
			v.Flags&^clusterKnownFlags != 0 {
			return nil, fmt.Errorf("CLUSTER record %d is malformed", i)
		}
		c.VGPUs = append(c.VGPUs, v)
	}
	return c, nil
}

// parseComputeGPUs reads COMPUTE for what this plugin takes of it: each vGPU
// device's GPU, as nvidia-smi numbers it (absent: not on this machine).
func parseComputeGPUs(p []byte) (map[vgpuDevice]uint32, error) {
	if len(p) < protocol.ComputeHeaderSize {
		return nil, fmt.Errorf("COMPUTE of %d bytes is shorter than its header", len(p))
	}
	ndevs, nprocs := protocol.ComputeHeaderNdevs(p), protocol.ComputeHeaderNprocs(p)
	if ndevs > protocol.VGPU_COMPUTE_MAX_DEVICES || nprocs > protocol.VGPU_COMPUTE_MAX_PROCS {
		return nil, fmt.Errorf("COMPUTE counts %d devices and %d processes (at most %d and %d)",
			ndevs, nprocs, protocol.VGPU_COMPUTE_MAX_DEVICES, protocol.VGPU_COMPUTE_MAX_PROCS)
	}
	want := protocol.ComputeHeaderSize + uint64(ndevs)*protocol.ComputeDeviceSize +
		uint64(nprocs)*protocol.ComputeProcSize
	if want != uint64(len(p)) {
		return nil, fmt.Errorf("COMPUTE of %d devices and %d processes takes %d bytes, not %d", ndevs, nprocs, want, len(p))
	}
	gpus := make(map[vgpuDevice]uint32)
	q := p[protocol.ComputeHeaderSize:]
	for i := uint32(0); i < ndevs; i++ {
		r := q[:protocol.ComputeDeviceSize]
		q = q[protocol.ComputeDeviceSize:]
		name, ok := cstring(protocol.ComputeDeviceVGPU(r))
		dev, gpu := protocol.ComputeDeviceDevice(r), protocol.ComputeDeviceGPU(r)
		if !ok || dev >= protocol.VGPU_STATUS_MAX_DEVICES || protocol.ComputeDeviceShare(r) > percent ||
			protocol.ComputeDeviceMode(r) > protocol.VGPU_COMPUTE_VIEW_CAP ||
			protocol.ComputeDeviceHeld(r) > permille || protocol.ComputeDeviceUtilization(r) > permille {
			return nil, fmt.Errorf("COMPUTE device record %d is malformed", i)
		}
		if gpu != noGPU {
			gpus[vgpuDevice{name, dev}] = gpu
		}
	}
	for i := uint32(0); i < nprocs; i++ {
		r := q[:protocol.ComputeProcSize]
		q = q[protocol.ComputeProcSize:]
		_, ok := cstring(protocol.ComputeProcVGPU(r))
		if !ok || protocol.ComputeProcDevice(r) >= protocol.VGPU_STATUS_MAX_DEVICES ||
			protocol.ComputeProcUtilization(r) > permille {
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
	b := make([]byte, protocol.MsgBindSize)
	if err := putCString(protocol.MsgBindVGPU(b), vgpu); err != nil {
		return nil, err
	}
	protocol.PutMsgBindPID(b, pid)
	return b, nil
}

// parseBound checks BOUND and gives its vGPU and cgroup.
func parseBound(p []byte) (string, string, error) {
	if len(p) != protocol.MsgBoundSize {
		return "", "", fmt.Errorf("BOUND has %d payload bytes, want %d", len(p), protocol.MsgBoundSize)
	}
	vgpu, ok1 := cstring(protocol.MsgBoundVGPU(p))
	cg, ok2 := cstring(protocol.MsgBoundCgroup(p))
	if !ok1 || !ok2 {
		return "", "", fmt.Errorf("malformed BOUND")
	}
	return vgpu, cg, nil
}
