package main

// Registering a class's server with the kubelet (its Registration service
// on DIR/kubelet.sock), and dialing the kubelet's Unix sockets.

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"google.golang.org/grpc"

	api "vgpu.dev/api/deviceplugin/v1beta1"
)

const (
	apiVersion      = "v1beta1"
	kubeletSocket   = "kubelet.sock"
	registerTimeout = 10 * time.Second
)

// dialUnix connects a gRPC client to a Unix socket (grpc-go of Debian's
// age has no unix: scheme of its own).
func dialUnix(path string) (*grpc.ClientConn, error) {
	return grpc.Dial(path, grpc.WithInsecure(),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", addr)
		}))
}

// register tells the kubelet this server's socket and resource.
func (s *classServer) register() error {
	sock := filepath.Join(s.p.kubeletDir, kubeletSocket)
	conn, err := dialUnix(sock)
	if err != nil {
		return fmt.Errorf("the kubelet at %s: %w", sock, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	_, err = api.NewRegistrationClient(conn).Register(ctx, &api.RegisterRequest{
		Version: apiVersion, Endpoint: s.endpoint, ResourceName: s.resource, Options: pluginOptions(),
	})
	if err != nil {
		return fmt.Errorf("registering %s with the kubelet at %s: %w", s.resource, sock, err)
	}
	s.registered = true
	s.p.countRegistration(s.resource)
	return nil
}
