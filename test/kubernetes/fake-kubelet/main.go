// fake-kubelet: the kubelet as a device plugin sees it, for the tests
// (test/kubernetes/device_plugin.sh).  It serves Registration on
// DIR/kubelet.sock and PodResourcesLister on its own socket, talks to the
// plugins that register as the kubelet's device manager does, takes
// commands on stdin (commands.go), and prints every event and answer as one
// JSON line on stdout.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"

	podres "vgpu.dev/api/podresources/v1"
)

func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

func main() {
	dir := flag.String("dir", "", "the device plugin directory: kubelet.sock is served there")
	podSock := flag.String("pod-resources", "", "the socket to serve PodResourcesLister on")
	flag.Parse()
	if *dir == "" || *podSock == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: fake-kubelet --dir DIR --pod-resources SOCKET < commands")
		os.Exit(2)
	}
	pods := newPodResources()
	os.Remove(*podSock)
	l, err := net.Listen("unix", *podSock)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-kubelet:", err)
		os.Exit(1)
	}
	psrv := grpc.NewServer()
	podres.RegisterPodResourcesListerServer(psrv, pods)
	go psrv.Serve(l)

	k := &kubelet{dir: *dir, endpoints: map[string]*endpoint{}}
	if err := k.serve(); err != nil {
		fmt.Fprintln(os.Stderr, "fake-kubelet:", err)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				emit("exit", map[string]interface{}{"why": "end of commands"})
				return
			}
			k.command(line, pods)
		case sig := <-sigs:
			emit("exit", map[string]interface{}{"why": sig.String()})
			return
		}
	}
}
