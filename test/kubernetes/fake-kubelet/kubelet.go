package main

// The kubelet's side of the device plugin API: Registration on
// DIR/kubelet.sock; for each plugin that registers, a client that asks its
// options and keeps its ListAndWatch stream, as the kubelet's device
// manager does; and a restart that, as the kubelet's start does, removes
// every socket in DIR and serves a new kubelet.sock.

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	api "vgpu.dev/api/deviceplugin/v1beta1"
)

type kubelet struct {
	dir string

	mu        sync.Mutex
	srv       *grpc.Server
	endpoints map[string]*endpoint // by resource
	streams   int                  // ListAndWatch streams opened, all resources
}

// endpoint is a registered plugin, as the kubelet holds it.
type endpoint struct {
	resource string
	socket   string
	conn     *grpc.ClientConn
	client   api.DevicePluginClient
	cancel   context.CancelFunc

	mu      sync.Mutex
	devices []*api.Device
	updates int
}

func dialUnix(path string) (*grpc.ClientConn, error) {
	return grpc.Dial(path, grpc.WithInsecure(),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", addr)
		}))
}

func (k *kubelet) socket() string { return filepath.Join(k.dir, "kubelet.sock") }

// serve starts Registration on a new kubelet.sock.
func (k *kubelet) serve() error {
	os.Remove(k.socket())
	l, err := net.Listen("unix", k.socket())
	if err != nil {
		return err
	}
	// The socket stays when the server stops, as a kubelet that exits leaves
	// it: the next one's start removes it (restart).
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	srv := grpc.NewServer()
	api.RegisterRegistrationServer(srv, k)
	k.mu.Lock()
	k.srv = srv
	k.mu.Unlock()
	go srv.Serve(l)
	var ino uint64
	if fi, err := os.Stat(k.socket()); err == nil {
		ino = inodeOf(fi)
	}
	emit("listening", map[string]interface{}{"socket": k.socket(), "inode": ino})
	return nil
}

// restart is the kubelet starting again: its plugins are forgotten, every
// socket in DIR removed, and a new kubelet.sock served.
func (k *kubelet) restart() error {
	k.mu.Lock()
	srv := k.srv
	eps := k.endpoints
	k.endpoints = map[string]*endpoint{}
	k.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
	for _, ep := range eps {
		ep.close()
	}
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		return err
	}
	var removed []string
	for _, e := range entries {
		if e.Type()&os.ModeSocket != 0 {
			if err := os.Remove(filepath.Join(k.dir, e.Name())); err == nil {
				removed = append(removed, e.Name())
			}
		}
	}
	sort.Strings(removed)
	emit("restarting", map[string]interface{}{"removed": removed})
	return k.serve()
}

func (k *kubelet) Register(_ context.Context, req *api.RegisterRequest) (*api.Empty, error) {
	opts := map[string]interface{}{}
	if req.Options != nil {
		opts["pre_start_required"] = req.Options.PreStartRequired
		opts["get_preferred_allocation_available"] = req.Options.GetPreferredAllocationAvailable
	}
	ev := map[string]interface{}{"resource": req.ResourceName, "endpoint": req.Endpoint, "version": req.Version,
		"options": opts}
	if req.Version != "v1beta1" {
		ev["error"] = "unsupported version"
		emit("register", ev)
		return nil, grpcstatus.Errorf(codes.InvalidArgument, "version %q is not supported; v1beta1 is", req.Version)
	}
	if !strings.Contains(req.ResourceName, "/") || strings.Contains(req.Endpoint, "/") {
		ev["error"] = "malformed"
		emit("register", ev)
		return nil, grpcstatus.Errorf(codes.InvalidArgument, "resource %q or endpoint %q is malformed",
			req.ResourceName, req.Endpoint)
	}
	emit("register", ev)
	ep := &endpoint{resource: req.ResourceName, socket: filepath.Join(k.dir, req.Endpoint)}
	k.mu.Lock()
	old := k.endpoints[req.ResourceName]
	k.endpoints[req.ResourceName] = ep
	k.mu.Unlock()
	if old != nil {
		old.close()
	}
	go k.watch(ep)
	return &api.Empty{}, nil
}

// watch is the device manager's client of one plugin: its options, then
// its ListAndWatch stream, every list recorded, until it ends.
func (k *kubelet) watch(ep *endpoint) {
	conn, err := dialUnix(ep.socket)
	if err != nil {
		emit("stream_end", map[string]interface{}{"resource": ep.resource, "error": err.Error()})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ep.mu.Lock()
	ep.conn, ep.client, ep.cancel = conn, api.NewDevicePluginClient(conn), cancel
	ep.mu.Unlock()
	opts, err := ep.client.GetDevicePluginOptions(ctx, &api.Empty{})
	if err != nil {
		emit("options", map[string]interface{}{"resource": ep.resource, "error": err.Error()})
		return
	}
	emit("options", map[string]interface{}{"resource": ep.resource, "pre_start_required": opts.PreStartRequired,
		"get_preferred_allocation_available": opts.GetPreferredAllocationAvailable})
	stream, err := ep.client.ListAndWatch(ctx, &api.Empty{})
	if err != nil {
		emit("stream_end", map[string]interface{}{"resource": ep.resource, "error": err.Error()})
		return
	}
	k.mu.Lock()
	k.streams++
	streamNo := k.streams
	k.mu.Unlock()
	for {
		resp, err := stream.Recv()
		if err != nil {
			emit("stream_end", map[string]interface{}{"resource": ep.resource, "stream": streamNo,
				"error": err.Error()})
			return
		}
		ep.mu.Lock()
		ep.devices = resp.Devices
		ep.updates++
		seq := ep.updates
		ep.mu.Unlock()
		emit("devices", map[string]interface{}{"resource": ep.resource, "stream": streamNo, "seq": seq,
			"devices": deviceList(resp.Devices), "summary": summary(resp.Devices)})
	}
}

func (ep *endpoint) close() {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.cancel != nil {
		ep.cancel()
	}
	if ep.conn != nil {
		ep.conn.Close()
	}
}

// endpoint is the plugin registered for resource.
func (k *kubelet) endpoint(resource string) (*endpoint, error) {
	k.mu.Lock()
	ep := k.endpoints[resource]
	k.mu.Unlock()
	if ep == nil {
		return nil, fmt.Errorf("no plugin registered %s", resource)
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.client == nil {
		return nil, fmt.Errorf("the plugin of %s is not connected yet", resource)
	}
	return ep, nil
}

func deviceList(ds []*api.Device) []map[string]string {
	out := []map[string]string{}
	for _, d := range ds {
		out = append(out, map[string]string{"id": d.ID, "health": d.Health})
	}
	return out
}

// summary is a list as one string: "train-0=Healthy train-1=Unhealthy",
// in ID order; "" when empty.
func summary(ds []*api.Device) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.ID+"="+d.Health)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
