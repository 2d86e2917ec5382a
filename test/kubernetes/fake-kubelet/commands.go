package main

// The commands, one a line on stdin, each answered by one event:
//
//	preferred RESOURCE SIZE AVAILABLE[,ID...] [MUST[,ID...]]
//	allocate RESOURCE IDS[;IDS...] [NAMESPACE/POD/CONTAINER]
//	    IDS is a container's device IDs, comma separated; ';' starts the
//	    next container of the same request.  With a container named, an
//	    allocation that succeeds is recorded for PodResources List.
//	prestart RESOURCE ID[,ID...]
//	forget NAMESPACE/POD          the pod ended: PodResources forgets it
//	restart                       the kubelet restarts
//	echo TEXT                     answers TEXT (every earlier answer is out)

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	grpcstatus "google.golang.org/grpc/status"

	api "vgpu.dev/api/deviceplugin/v1beta1"
)

const callTimeout = 30 * time.Second

func splitIDs(s string) []string {
	if s == "" || s == "-" {
		return nil
	}
	return strings.Split(s, ",")
}

// failed answers cmd with err, with its gRPC code where it has one.
func failed(cmd, resource string, err error) {
	ev := map[string]interface{}{"resource": resource, "ok": false, "error": err.Error()}
	if st, ok := grpcstatus.FromError(err); ok {
		ev["code"] = st.Code().String()
		ev["error"] = st.Message()
	}
	emit(cmd, ev)
}

func (k *kubelet) command(line string, pods *podResources) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	usage := func(u string) { emit("usage", map[string]interface{}{"error": "usage: " + u, "line": line}) }
	switch f[0] {
	case "echo":
		emit("echo", map[string]interface{}{"text": strings.Join(f[1:], " ")})
	case "restart":
		if err := k.restart(); err != nil {
			emit("restarted", map[string]interface{}{"ok": false, "error": err.Error()})
		}
	case "forget":
		if len(f) != 2 || strings.Count(f[1], "/") != 1 {
			usage("forget NAMESPACE/POD")
			return
		}
		p := strings.SplitN(f[1], "/", 2)
		emit("forget", map[string]interface{}{"containers": pods.forget(p[0], p[1])})
	case "preferred":
		if len(f) < 4 || len(f) > 5 {
			usage("preferred RESOURCE SIZE AVAILABLE [MUST]")
			return
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			usage("preferred RESOURCE SIZE AVAILABLE [MUST]")
			return
		}
		req := &api.ContainerPreferredAllocationRequest{AvailableDeviceIDs: splitIDs(f[3]), AllocationSize: int32(size)}
		if len(f) == 5 {
			req.MustIncludeDeviceIDs = splitIDs(f[4])
		}
		ep, err := k.endpoint(f[1])
		if err != nil {
			failed("preferred", f[1], err)
			return
		}
		resp, err := ep.client.GetPreferredAllocation(ctx, &api.PreferredAllocationRequest{
			ContainerRequests: []*api.ContainerPreferredAllocationRequest{req}})
		if err != nil {
			failed("preferred", f[1], err)
			return
		}
		ids := []string{}
		for _, c := range resp.ContainerResponses {
			ids = append(ids, c.DeviceIDs...)
		}
		emit("preferred", map[string]interface{}{"resource": f[1], "ok": true, "devices": ids,
			"containers": len(resp.ContainerResponses)})
	case "allocate":
		if len(f) < 3 || len(f) > 4 {
			usage("allocate RESOURCE IDS[;IDS...] [NAMESPACE/POD/CONTAINER]")
			return
		}
		k.allocate(ctx, f, pods)
	case "prestart":
		if len(f) != 3 {
			usage("prestart RESOURCE ID[,ID...]")
			return
		}
		ep, err := k.endpoint(f[1])
		if err != nil {
			failed("prestart", f[1], err)
			return
		}
		if _, err := ep.client.PreStartContainer(ctx, &api.PreStartContainerRequest{DevicesIds: splitIDs(f[2])}); err != nil {
			failed("prestart", f[1], err)
			return
		}
		emit("prestart", map[string]interface{}{"resource": f[1], "ok": true})
	default:
		usage("preferred|allocate|prestart|forget|restart|echo ...")
	}
}

func (k *kubelet) allocate(ctx context.Context, f []string, pods *podResources) {
	resource := f[1]
	var holder *containerKey
	if len(f) == 4 {
		p := strings.Split(f[3], "/")
		if len(p) != 3 {
			emit("usage", map[string]interface{}{"error": "the container is NAMESPACE/POD/CONTAINER"})
			return
		}
		holder = &containerKey{p[0], p[1], p[2]}
	}
	req := &api.AllocateRequest{}
	for _, ids := range strings.Split(f[2], ";") {
		req.ContainerRequests = append(req.ContainerRequests, &api.ContainerAllocateRequest{DevicesIds: splitIDs(ids)})
	}
	ep, err := k.endpoint(resource)
	if err != nil {
		failed("allocate", resource, err)
		return
	}
	resp, err := ep.client.Allocate(ctx, req)
	if err != nil {
		failed("allocate", resource, err)
		return
	}
	var containers []map[string]interface{}
	for _, c := range resp.ContainerResponses {
		cdi := []string{}
		for _, d := range c.CdiDevices {
			cdi = append(cdi, d.Name)
		}
		containers = append(containers, map[string]interface{}{
			"envs": c.Envs, "annotations": c.Annotations, "cdi_devices": cdi,
			"mounts": len(c.Mounts), "devices": len(c.Devices),
		})
	}
	if len(resp.ContainerResponses) != len(req.ContainerRequests) {
		failed("allocate", resource, fmt.Errorf("%d container responses to %d requests",
			len(resp.ContainerResponses), len(req.ContainerRequests)))
		return
	}
	if holder != nil {
		for _, c := range req.ContainerRequests {
			pods.record(*holder, resource, c.DevicesIds)
		}
	}
	emit("allocate", map[string]interface{}{"resource": resource, "ok": true, "containers": containers})
}
