package main

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	api "vgpu.dev/api/deviceplugin/v1beta1"
	"vgpu.dev/protocol"
)

// A name too long for a char[len(field)] field is cut to its full length,
// unterminated.
func clusterRecord(name, class string, flags, xid, ndev, compute uint32) []byte {
	r := make([]byte, protocol.ClusterVGPUSize)
	copy(protocol.ClusterVGPUName(r), name)
	copy(protocol.ClusterVGPUCls(r), class)
	protocol.PutClusterVGPUFlags(r, flags)
	protocol.PutClusterVGPUXID(r, xid)
	protocol.PutClusterVGPUNdev(r, ndev)
	protocol.PutClusterVGPUMemory(r, 1<<30)
	protocol.PutClusterVGPUCompute(r, compute)
	return r
}

func clusterPayload(generation uint64, records ...[]byte) []byte {
	p := make([]byte, protocol.ClusterHeaderSize)
	protocol.PutClusterHeaderN(p, uint32(len(records)))
	protocol.PutClusterHeaderGeneration(p, generation)
	for _, r := range records {
		p = append(p, r...)
	}
	return p
}

func TestParseCluster(t *testing.T) {
	p := clusterPayload(7, clusterRecord("train-0", "train", 1, 0, 1, 50), clusterRecord("host", "", 0, 0, 2, 100))
	c, err := parseCluster(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Generation != 7 || len(c.VGPUs) != 2 || c.VGPUs[0].Name != "train-0" || c.VGPUs[0].Class != "train" ||
		c.VGPUs[0].Memory != 1<<30 || c.VGPUs[1].NDev != 2 {
		t.Fatalf("parsed %+v", c)
	}
	long := strings.Repeat("x", protocol.VGPU_NAME_LEN)
	unknownFlag := uint32((clusterKnownFlags + 1) &^ clusterKnownFlags) // the lowest flag it does not know
	bad := map[string][]byte{
		"short":            p[:protocol.ClusterHeaderSize-1],
		"length":           p[:len(p)-1],
		"count":            clusterPayload(1, make([][]byte, protocol.VGPU_CLUSTER_MAX+1)...)[:protocol.ClusterHeaderSize],
		"unterminated":     clusterPayload(1, clusterRecord(long, "c", 1, 0, 1, 0)),
		"class":            clusterPayload(1, clusterRecord("a", long, 1, 0, 1, 0)),
		"devices":          clusterPayload(1, clusterRecord("a", "c", 1, 0, protocol.VGPU_STATUS_MAX_DEVICES+1, 0)),
		"compute":          clusterPayload(1, clusterRecord("a", "c", 1, 0, 1, percent+1)),
		"flags":            clusterPayload(1, clusterRecord("a", "c", unknownFlag, 0, 1, 0)),
		"trailing garbage": append(clusterPayload(1, clusterRecord("a", "c", 1, 0, 1, 0)), 0),
	}
	for name, b := range bad {
		if _, err := parseCluster(b); err == nil {
			t.Errorf("%s: a malformed CLUSTER was taken", name)
		}
	}
}

func statusPayload(nprocs int, procVGPU uint32) []byte {
	p := make([]byte, protocol.StatusHeaderSize+protocol.StatusVGPUSize+nprocs*protocol.StatusProcSize)
	protocol.PutStatusHeaderNvgpus(p, 1)
	protocol.PutStatusHeaderNprocs(p, uint32(nprocs))
	protocol.PutStatusHeaderFeatures(p, protocol.VGPU_STATUS_HAS_CLUSTER|protocol.VGPU_STATUS_HAS_COMPUTE)
	copy(protocol.StatusHeaderVersion(p), "0.1.0")
	v := p[protocol.StatusHeaderSize:]
	copy(protocol.StatusVGPUName(v), "train-0")
	protocol.PutStatusVGPUNdev(v, 1)
	protocol.PutStatusVGPUProcesses(v, 3)
	d := protocol.StatusVGPUDev(v, 0)
	copy(protocol.StatusDeviceUUID(d), "GPU-0000")
	copy(protocol.StatusDeviceGPUName(d), "Fake GPU")
	protocol.PutStatusDevicePhysicalTotal(d, 16<<30)
	protocol.PutStatusDeviceLimit(d, 1<<30)
	protocol.PutStatusDeviceUsed(d, 5)
	q := p[protocol.StatusHeaderSize+protocol.StatusVGPUSize:]
	for i := 0; i < nprocs; i++ {
		protocol.PutStatusProcVGPU(q[i*protocol.StatusProcSize:], procVGPU)
	}
	return p
}

func TestParseStatus(t *testing.T) {
	s, err := parseStatus(statusPayload(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	d := s.VGPUs[0].Devices[0]
	if s.Version != "0.1.0" || s.VGPUs[0].Processes != 3 || d.UUID != "GPU-0000" || d.GPUName != "Fake GPU" ||
		d.Limit != 1<<30 || d.Used != 5 || d.PhysicalTotal != 16<<30 {
		t.Fatalf("parsed %+v", s)
	}
	if _, err := parseStatus(statusPayload(1, 1)); err == nil {
		t.Error("a process of vGPU record 1 of 1 was taken")
	}
	if _, err := parseStatus(statusPayload(1, 0)[:protocol.StatusHeaderSize+protocol.StatusVGPUSize]); err == nil {
		t.Error("a STATUS shorter than its counts was taken")
	}
	p := statusPayload(0, 0)
	version := protocol.StatusHeaderVersion(p)
	copy(version, strings.Repeat("v", len(version)))
	if _, err := parseStatus(p); err == nil {
		t.Error("an unterminated version was taken")
	}
}

func TestReadFrame(t *testing.T) {
	payload := []byte("abc")
	cluster := uint16(protocol.VGPU_MSG_CLUSTER)
	got, err := readFrame(bytes.NewReader(frame(cluster, payload)), cluster)
	if err != nil || string(got) != "abc" {
		t.Fatalf("round trip: %q %v", got, err)
	}
	refuse := make([]byte, protocol.MsgRefuseSize)
	protocol.PutMsgRefuseCode(refuse, protocol.VGPU_REFUSE_NOT_ADMITTED)
	copy(protocol.MsgRefuseReason(refuse), "no such vGPU")
	_, err = readFrame(bytes.NewReader(frame(protocol.VGPU_MSG_REFUSE, refuse)), protocol.VGPU_MSG_BOUND)
	var r *refusedError
	if !errors.As(err, &r) || r.reason != "no such vGPU" || r.code != protocol.VGPU_REFUSE_NOT_ADMITTED {
		t.Fatalf("REFUSE: %v", err)
	}
	magic := frame(cluster, payload)
	protocol.PutProtoHeaderMagic(magic, protocol.VGPU_PROTO_MAGIC+1)
	bad := map[string][]byte{
		"magic":   magic,
		"type":    frame(protocol.VGPU_MSG_STATUS, payload),
		"short":   frame(cluster, payload)[:protocol.ProtoHeaderSize+len(payload)-1],
		"refuse":  frame(protocol.VGPU_MSG_REFUSE, refuse[:len(refuse)-1]),
		"nothing": nil,
	}
	version := frame(cluster, payload)
	protocol.PutProtoHeaderVersion(version, protocol.VGPU_PROTO_VERSION+1)
	bad["version"] = version
	huge := frame(cluster, nil)
	protocol.PutProtoHeaderLength(huge, protocol.VGPU_PROTO_MAX_REPLY+1)
	bad["huge"] = huge
	for name, b := range bad {
		if _, err := readFrame(bytes.NewReader(b), cluster); err == nil {
			t.Errorf("%s: a bad frame was taken", name)
		}
	}
}

func TestBindRequest(t *testing.T) {
	b, err := bindRequest("train-0", 0)
	if name, ok := cstring(protocol.MsgBindVGPU(b)); err != nil || len(b) != protocol.MsgBindSize || !ok ||
		name != "train-0" || protocol.MsgBindPID(b) != 0 {
		t.Fatalf("BIND %q %v", b, err)
	}
	if _, err := bindRequest(strings.Repeat("x", protocol.VGPU_NAME_LEN), 0); err == nil {
		t.Error("a name with no room for its NUL was sent")
	}
	bound := make([]byte, protocol.MsgBoundSize)
	copy(protocol.MsgBoundVGPU(bound), "train-0")
	if v, cg, err := parseBound(bound); err != nil || v != "train-0" || cg != "" {
		t.Errorf("BOUND: %q %q %v", v, cg, err)
	}
	if _, _, err := parseBound(bound[:len(bound)-1]); err == nil {
		t.Error("a short BOUND was taken")
	}
}

func TestClassesOf(t *testing.T) {
	c := &cluster{VGPUs: []clusterVGPU{
		{Name: "train-10", Class: "train", Flags: protocol.VGPU_CLUSTER_CONTAINERS},
		{Name: "train-2", Class: "train", Flags: protocol.VGPU_CLUSTER_CONTAINERS | protocol.VGPU_CLUSTER_BOUND},
		{Name: "train-3", Class: "train", Flags: protocol.VGPU_CLUSTER_CONTAINERS | protocol.VGPU_CLUSTER_UNHEALTHY,
			XID: 79},
		{Name: "old-0", Class: "old", Flags: protocol.VGPU_CLUSTER_CONTAINERS | protocol.VGPU_CLUSTER_RETIRED},
		{Name: "host", Flags: 0},
		{Name: "vm", Class: "vm", Flags: protocol.VGPU_CLUSTER_CONTAINERS | protocol.VGPU_CLUSTER_GUEST},
	}}
	got := classesOf(c, "")
	if len(got) != 1 || len(got["train"]) != 3 {
		t.Fatalf("classes %+v", got)
	}
	ds := got["train"]
	if ds[0].ID != "train-2" || !ds[0].Bound || ds[1].ID != "train-3" || ds[1].Healthy ||
		!strings.Contains(ds[1].Why, "XID 79") || ds[2].ID != "train-10" || !ds[2].Healthy {
		t.Fatalf("devices %+v", ds)
	}
	for _, d := range classesOf(c, "away")["train"] {
		if d.Healthy {
			t.Errorf("%s healthy with the mediator away", d.ID)
		}
	}
}

// A class whose name no kubelet takes as a resource's is not offered, and
// the log says so, rather than registering it for ever in vain.
func TestClassNamesAKubeletRefuses(t *testing.T) {
	for name, want := range map[string]bool{"train": true, "a": true, "t.4-x_1": true, "_edge": false,
		"edge-": false, "e/dge": false, "": false, strings.Repeat("a", 64): false, strings.Repeat("a", 63): true} {
		if resourceName(name) != want {
			t.Errorf("resourceName(%q) = %v", name, !want)
		}
	}
	c := &cluster{VGPUs: []clusterVGPU{
		{Name: "_edge-0", Class: "_edge", Flags: protocol.VGPU_CLUSTER_CONTAINERS},
		{Name: "train-0", Class: "train", Flags: protocol.VGPU_CLUSTER_CONTAINERS},
	}}
	if got := classesOf(c, ""); len(got) != 1 || len(got["train"]) != 1 {
		t.Fatalf("classes %+v", got)
	}
	if d := describe(c); !strings.Contains(d, "not offered") || !strings.Contains(d, "_edge") ||
		!strings.Contains(d, "train (train-0)") {
		t.Fatalf("described as %q", d)
	}
}

func TestPrefer(t *testing.T) {
	s := &classServer{devices: []device{
		{ID: "t-0", Healthy: true, Bound: true}, {ID: "t-1", Healthy: false}, {ID: "t-2", Healthy: true},
		{ID: "t-3", Healthy: true}, {ID: "t-4", Healthy: true},
	}}
	got := s.prefer(&api.ContainerPreferredAllocationRequest{
		AvailableDeviceIDs: []string{"t-4", "t-3", "t-1", "t-0"}, MustIncludeDeviceIDs: []string{"t-4"}, AllocationSize: 2,
	})
	if strings.Join(got, ",") != "t-4,t-3" {
		t.Errorf("preferred %v", got)
	}
}

func TestEscapeLabel(t *testing.T) {
	if got := escapeLabel("a\\b\"c\nd"); got != `a\\b\"c\nd` {
		t.Errorf("escaped %s", got)
	}
}

// unitConsts are the numbers of the protocol code that protocol.h names in
// words only (units, and COMPUTE's "not on this machine"): the one place
// mediator_messages.go may write a number.
var unitConsts = map[string]bool{"percent": true, "permille": true, "noGPU": true}

// TestNoLayoutLiterals: the code that decodes the mediator's messages writes
// no number of the protocol itself.  Every size, offset, limit, type and flag
// is the package protocol's, generated from the C headers at build time
// (tools/generate/gen_go_protocol.py), so that it cannot drift from the C.
// And no file of the plugin reads bytes but through that package's accessors.
func TestNoLayoutLiterals(t *testing.T) {
	for _, name := range []string{"mediator_wire.go", "mediator_messages.go"} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for _, id := range n.Names {
					if unitConsts[id.Name] {
						return false
					}
				}
			case *ast.BasicLit:
				if v, err := strconv.ParseUint(n.Value, 0, 64); n.Kind == token.INT && (err != nil || v != 0) {
					t.Errorf("%s: the number %s: name it from package protocol (protocol.h's constants, "+
						"sizes and field accessors), or add it to protocol.h", fset.Position(n.Pos()), n.Value)
				}
			}
			return true
		})
	}
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files here: %v", err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == `"encoding/binary"` {
				t.Errorf("%s imports encoding/binary: read the mediator's messages with package protocol's "+
					"accessors, whose offsets and widths are the C compiler's", name)
			}
		}
	}
}
