package main

// The PodResourcesLister service: what the fake kubelet recorded of the
// allocations it made (allocate with POD NAMESPACE CONTAINER).

import (
	"context"
	"sort"
	"sync"

	podres "vgpu.dev/api/podresources/v1"
)

type containerKey struct{ namespace, pod, container string }

type podResources struct {
	mu sync.Mutex
	// what each container holds: resource -> device IDs
	held map[containerKey]map[string][]string
}

func newPodResources() *podResources {
	return &podResources{held: map[containerKey]map[string][]string{}}
}

// record notes that the container got the devices of resource.
func (p *podResources) record(k containerKey, resource string, ids []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[k] == nil {
		p.held[k] = map[string][]string{}
	}
	p.held[k][resource] = append(p.held[k][resource], ids...)
}

// forget drops a pod, as the kubelet does when it ends.
func (p *podResources) forget(namespace, pod string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k := range p.held {
		if k.namespace == namespace && k.pod == pod {
			delete(p.held, k)
			n++
		}
	}
	return n
}

func (p *podResources) List(context.Context, *podres.ListPodResourcesRequest) (*podres.ListPodResourcesResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pods := map[[2]string]*podres.PodResources{}
	var keys []containerKey
	for k := range p.held {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		if a.pod != b.pod {
			return a.pod < b.pod
		}
		return a.container < b.container
	})
	resp := &podres.ListPodResourcesResponse{}
	for _, k := range keys {
		pk := [2]string{k.namespace, k.pod}
		pr := pods[pk]
		if pr == nil {
			pr = &podres.PodResources{Name: k.pod, Namespace: k.namespace}
			pods[pk] = pr
			resp.PodResources = append(resp.PodResources, pr)
		}
		c := &podres.ContainerResources{Name: k.container}
		var resources []string
		for r := range p.held[k] {
			resources = append(resources, r)
		}
		sort.Strings(resources)
		for _, r := range resources {
			c.Devices = append(c.Devices, &podres.ContainerDevices{ResourceName: r, DeviceIds: p.held[k][r]})
		}
		pr.Containers = append(pr.Containers, c)
	}
	emit("pod_resources_list", map[string]interface{}{"pods": len(resp.PodResources)})
	return resp, nil
}
