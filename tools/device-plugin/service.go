package main

// The DevicePlugin service the kubelet calls, for one class.

import (
	"context"
	"fmt"
	"log"
	"strings"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	api "vgpu.dev/api/deviceplugin/v1beta1"
)

const (
	healthy   = "Healthy"
	unhealthy = "Unhealthy"
)

type devicePluginService struct {
	s *classServer
}

func pluginOptions() *api.DevicePluginOptions {
	return &api.DevicePluginOptions{PreStartRequired: true, GetPreferredAllocationAvailable: true}
}

func (d *devicePluginService) GetDevicePluginOptions(context.Context, *api.Empty) (*api.DevicePluginOptions, error) {
	return pluginOptions(), nil
}

func apiDevices(ds []device) []*api.Device {
	out := make([]*api.Device, 0, len(ds))
	for _, dev := range ds {
		h := healthy
		if !dev.Healthy {
			h = unhealthy
		}
		out = append(out, &api.Device{ID: dev.ID, Health: h})
	}
	return out
}

// ListAndWatch sends the class's devices, and again each time they change,
// until the kubelet goes, the server stops, or the class is gone (then the
// last list sent is empty).
func (d *devicePluginService) ListAndWatch(_ *api.Empty, stream api.DevicePlugin_ListAndWatchServer) error {
	s := d.s
	s.mu.Lock()
	s.streams++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.streams--
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		ds, changed, ending := append([]device(nil), s.devices...), s.changed, s.ending
		s.mu.Unlock()
		if err := stream.Send(&api.ListAndWatchResponse{Devices: apiDevices(ds)}); err != nil {
			return err
		}
		if ending {
			return nil
		}
		select {
		case <-changed:
		case <-stream.Context().Done():
			return nil
		}
	}
}

// usable checks that id is a healthy device of this class.
func (s *classServer) usable(id string) (device, error) {
	dev, ok := s.lookup(id)
	if !ok {
		var ids []string
		for _, d := range s.snapshot() {
			ids = append(ids, d.ID)
		}
		return dev, grpcstatus.Errorf(codes.NotFound, "%s has no device %q (its devices: %s)",
			s.resource, id, strings.Join(ids, ", "))
	}
	if !dev.Healthy {
		return dev, grpcstatus.Errorf(codes.FailedPrecondition, "%s device %s is unhealthy: %s", s.resource, id, dev.Why)
	}
	return dev, nil
}

// GetPreferredAllocation prefers what must be included, then the healthy
// vGPUs no container is bound to, then the other healthy ones, in name order.
func (d *devicePluginService) GetPreferredAllocation(_ context.Context, req *api.PreferredAllocationRequest) (*api.PreferredAllocationResponse, error) {
	resp := &api.PreferredAllocationResponse{}
	for _, c := range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses,
			&api.ContainerPreferredAllocationResponse{DeviceIDs: d.s.prefer(c)})
	}
	return resp, nil
}

func (s *classServer) prefer(c *api.ContainerPreferredAllocationRequest) []string {
	size := int(c.AllocationSize)
	chosen := map[string]bool{}
	var out []string
	for _, id := range c.MustIncludeDeviceIDs {
		if !chosen[id] {
			chosen[id] = true
			out = append(out, id)
		}
	}
	available := map[string]bool{}
	for _, id := range c.AvailableDeviceIDs {
		available[id] = true
	}
	// In name order: healthy and unbound first, then healthy ones still
	// bound to a container that has ended (the kubelet offers only the free),
	// so that the answer has the size asked for wherever it can.
	devs := s.snapshot()
	for _, pass := range []func(device) bool{
		func(dev device) bool { return dev.Healthy && !dev.Bound },
		func(dev device) bool { return dev.Healthy },
	} {
		for _, dev := range devs {
			if len(out) < size && available[dev.ID] && !chosen[dev.ID] && pass(dev) {
				chosen[dev.ID] = true
				out = append(out, dev.ID)
			}
		}
	}
	return out
}

// Allocate gives each container its one vGPU: the mediator unbinds it
// from whatever container had it (BIND, pid 0), and the runtime is told the
// CDI device to inject, by the CRI field and by annotation.
func (d *devicePluginService) Allocate(_ context.Context, req *api.AllocateRequest) (*api.AllocateResponse, error) {
	s := d.s
	for i, c := range req.ContainerRequests {
		if len(c.DevicesIds) != 1 {
			return nil, grpcstatus.Errorf(codes.InvalidArgument, "%s: container request %d asks for %d devices (%s): "+
				"one vGPU per container; ask for %s: 1", s.resource, i, len(c.DevicesIds),
				strings.Join(c.DevicesIds, ", "), s.resource)
		}
		if _, err := s.usable(c.DevicesIds[0]); err != nil {
			return nil, err
		}
	}
	resp := &api.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		id := c.DevicesIds[0]
		if _, err := s.p.med.bind(id, 0); err != nil {
			log.Printf("%s: Allocate of %s: BIND failed: %v", s.resource, id, err)
			return nil, grpcstatus.Errorf(codes.Unavailable, "%s: vGPU %s could not be handed to a new container: %v",
				s.resource, id, err)
		}
		s.p.countAllocation(s.resource)
		cdi := s.p.cdiKind + "=" + id
		resp.ContainerResponses = append(resp.ContainerResponses, &api.ContainerAllocateResponse{
			Envs:        map[string]string{"VGPU_NAME": id},
			Annotations: map[string]string{cdiAnnotation(id): cdi},
			CdiDevices:  []*api.CDIDevice{{Name: cdi}},
		})
		log.Printf("%s: allocated %s (CDI device %s)", s.resource, id, cdi)
	}
	return resp, nil
}

// cdiAnnotation is the key under which a runtime that reads CDI devices
// from annotations finds this one: cdi.k8s.io/PLUGIN_DEVICE.
func cdiAnnotation(id string) string {
	return fmt.Sprintf("cdi.k8s.io/vgpu-device-plugin_%s", id)
}

// PreStartContainer checks, just before the container starts, that its
// devices are still there and healthy.
func (d *devicePluginService) PreStartContainer(_ context.Context, req *api.PreStartContainerRequest) (*api.PreStartContainerResponse, error) {
	for _, id := range req.DevicesIds {
		if _, err := d.s.usable(id); err != nil {
			return nil, err
		}
	}
	return &api.PreStartContainerResponse{}, nil
}
