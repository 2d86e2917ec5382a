package main

// One class's device plugin: a gRPC server on its own socket in the
// kubelet's directory, serving the resource PREFIX/CLASS.  It is started,
// restarted (the kubelet removed its socket) and ended by the plugin's loop
// (plugin.go); the kubelet's calls come on gRPC's goroutines.

import (
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"

	api "vgpu.dev/api/deviceplugin/v1beta1"
)

type classServer struct {
	p        *plugin
	class    string
	resource string // PREFIX/CLASS
	endpoint string // the socket's name in the kubelet's directory
	socket   string

	mu         sync.Mutex
	devices    []device
	generation uint64        // the CLUSTER generation devices came from
	changed    chan struct{} // closed when devices change
	ending     bool          // the class is gone: streams send the last (empty) list and end
	streams    int           // ListAndWatch streams open

	// The loop's alone.
	srv        *grpc.Server
	id         fileID // the socket, as this server made it
	registered bool
}

func newClassServer(p *plugin, class string) *classServer {
	endpoint := "vgpu-" + class + ".sock"
	return &classServer{
		p: p, class: class, resource: p.prefix + "/" + class, endpoint: endpoint,
		socket: filepath.Join(p.kubeletDir, endpoint), changed: make(chan struct{}),
	}
}

// setDevices publishes a new list to every ListAndWatch stream, when it or
// the generation it came from changed.
func (s *classServer) setDevices(ds []device, generation uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending || (sameDevices(ds, s.devices) && generation == s.generation && s.devices != nil) {
		return
	}
	s.devices, s.generation = ds, generation
	if s.devices == nil {
		s.devices = []device{}
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// lookup finds a device by its ID.
func (s *classServer) lookup(id string) (device, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.devices {
		if d.ID == id {
			return d, true
		}
	}
	return device{}, false
}

func (s *classServer) snapshot() []device {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]device(nil), s.devices...)
}

// fileID tells one socket file from another made in its place, even one
// given the same inode number (file systems reuse them at once): the inode
// and its change time.
type fileID struct {
	ino   uint64
	ctime int64
}

// socketID is path's, when it is a socket; else the zero fileID.
func socketID(path string) fileID {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileID{}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode()&os.ModeSocket != 0 {
		return fileID{ino: st.Ino, ctime: st.Ctim.Nano()}
	}
	return fileID{}
}

// start listens on the socket (a stale one there is removed) and serves.
func (s *classServer) start() error {
	if err := os.Remove(s.socket); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("%s: %w", s.socket, err)
	}
	l, err := net.Listen("unix", s.socket)
	if err != nil {
		return err
	}
	// The socket is removed by stop(), and only while it is still the one
	// made here: the kubelet may have put another in its place.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	s.id = socketID(s.socket)
	s.srv = grpc.NewServer()
	api.RegisterDevicePluginServer(s.srv, &devicePluginService{s: s})
	go func(srv *grpc.Server) {
		if err := srv.Serve(l); err != nil {
			log.Printf("%s: serving %s: %v", s.resource, s.socket, err)
		}
	}(s.srv)
	return nil
}

// ours says whether the socket is still the one this server listens on.
func (s *classServer) ours() bool {
	return s.srv != nil && s.id != (fileID{}) && socketID(s.socket) == s.id
}

// stop ends the server and its streams, and removes its socket.
func (s *classServer) stop() {
	if s.srv == nil {
		return
	}
	if s.ours() {
		os.Remove(s.socket)
	}
	s.srv.Stop()
	s.srv, s.id, s.registered = nil, fileID{}, false
}

// restart serves again on a new socket (the kubelet removed the old one,
// or restarted); the caller registers again.
func (s *classServer) restart() error {
	s.stop()
	return s.start()
}

// end is a class gone from the mediator: its streams are sent an empty list,
// then the server stops and its socket goes.
func (s *classServer) end() {
	s.mu.Lock()
	s.ending = true
	s.devices = []device{}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		n := s.streams
		s.mu.Unlock()
		if n == 0 {
			break
		}
	}
	s.stop()
}
