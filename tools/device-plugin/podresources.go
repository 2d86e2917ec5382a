package main

// Which container holds which device: the kubelet's PodResources List.

import (
	"context"
	"fmt"
	"time"

	podres "vgpu.dev/api/podresources/v1"
)

const podResourcesTimeout = 5 * time.Second

// holder is a container that holds a device.
type holder struct {
	Namespace, Pod, Container string
}

// deviceHolders asks the kubelet which container holds each device, by
// resource then device ID.
func deviceHolders(sock string) (map[string]map[string]holder, error) {
	conn, err := dialUnix(sock)
	if err != nil {
		return nil, fmt.Errorf("the kubelet's pod resources at %s: %w", sock, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), podResourcesTimeout)
	defer cancel()
	resp, err := podres.NewPodResourcesListerClient(conn).List(ctx, &podres.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("the kubelet's pod resources at %s: %w", sock, err)
	}
	out := map[string]map[string]holder{}
	for _, pod := range resp.PodResources {
		for _, c := range pod.Containers {
			for _, d := range c.Devices {
				if out[d.ResourceName] == nil {
					out[d.ResourceName] = map[string]holder{}
				}
				for _, id := range d.DeviceIds {
					out[d.ResourceName][id] = holder{Namespace: pod.Namespace, Pod: pod.Name, Container: c.Name}
				}
			}
		}
	}
	return out, nil
}
