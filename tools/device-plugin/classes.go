package main

// From the mediator's CLUSTER to what each resource advertises: a class is
// a [vgpu.CLASS] section with containers = N, and its devices are the vGPUs
// it made (CLASS-0 ...), in name order.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"vgpu.dev/protocol"
)

// device is one vGPU as a resource's device.
type device struct {
	ID      string
	Healthy bool
	Bound   bool   // bound to a container's cgroup (VGPU_CLUSTER_BOUND)
	Why     string // why it is unhealthy
}

// resourceName reports whether vgpu.dev/class is a name a kubelet takes:
// the name part of a qualified name, 1 to 63 letters, digits, '-', '_' or
// '.', beginning and ending with a letter or digit.  The mediator refuses
// other class names at config load; one from a mediator that did not is
// not offered rather than registered for ever in vain.
func resourceName(class string) bool {
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	if class == "" || len(class) > 63 || !alnum(class[0]) || !alnum(class[len(class)-1]) {
		return false
	}
	for i := 0; i < len(class); i++ {
		if !alnum(class[i]) && class[i] != '-' && class[i] != '_' && class[i] != '.' {
			return false
		}
	}
	return true
}

// offered reports whether v is a device of a class this plugin offers.
func offered(v clusterVGPU) bool {
	return v.Flags&protocol.VGPU_CLUSTER_CONTAINERS != 0 &&
		v.Flags&(protocol.VGPU_CLUSTER_RETIRED|protocol.VGPU_CLUSTER_GUEST) == 0 && v.Class != ""
}

// unnamable is the classes of c whose names no kubelet takes, in order.
func unnamable(c *cluster) []string {
	seen := map[string]bool{}
	if c != nil {
		for _, v := range c.VGPUs {
			if offered(v) && !resourceName(v.Class) {
				seen[v.Class] = true
			}
		}
	}
	return sortedKeys(seen)
}

// classesOf gives each class's devices; unreachable marks every one
// unhealthy, for that reason.
func classesOf(c *cluster, unreachable string) map[string][]device {
	out := map[string][]device{}
	if c == nil {
		return out
	}
	for _, v := range c.VGPUs {
		if !offered(v) || !resourceName(v.Class) {
			continue
		}
		d := device{ID: v.Name, Healthy: true, Bound: v.Flags&protocol.VGPU_CLUSTER_BOUND != 0}
		switch {
		case v.Flags&protocol.VGPU_CLUSTER_UNHEALTHY != 0 && (v.XID == 0 || v.XID == protocol.MED_XID_LOST):
			d.Healthy, d.Why = false, "one of its GPUs is lost"
		case v.Flags&protocol.VGPU_CLUSTER_UNHEALTHY != 0:
			d.Healthy, d.Why = false, fmt.Sprintf("one of its GPUs had XID %d", v.XID)
		case unreachable != "":
			d.Healthy, d.Why = false, unreachable
		}
		out[v.Class] = append(out[v.Class], d)
	}
	for _, ds := range out {
		sort.Slice(ds, func(i, j int) bool { return nameLess(ds[i].ID, ds[j].ID) })
	}
	return out
}

// nameLess orders names as people do: train-2 before train-10.
func nameLess(a, b string) bool {
	ia, ib := strings.LastIndexByte(a, '-'), strings.LastIndexByte(b, '-')
	if ia >= 0 && ib >= 0 && a[:ia] == b[:ib] {
		na, ea := strconv.Atoi(a[ia+1:])
		nb, eb := strconv.Atoi(b[ib+1:])
		if ea == nil && eb == nil && na != nb {
			return na < nb
		}
	}
	return a < b
}

func sameDevices(a, b []device) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sortedKeys is m's keys, in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
