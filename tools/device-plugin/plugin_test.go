package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	api "vgpu.dev/api/deviceplugin/v1beta1"
)

func clusterRecord(name, class string, flags, xid, ndev, compute uint32) []byte {
	r := make([]byte, clusterVGPUSize)
	copy(r[0:], name)
	copy(r[32:], class)
	le.PutUint32(r[64:], flags)
	le.PutUint32(r[68:], xid)
	le.PutUint32(r[72:], ndev)
	le.PutUint64(r[80:], 1<<30)
	le.PutUint32(r[88:], compute)
	return r
}

func clusterPayload(generation uint64, records ...[]byte) []byte {
	p := make([]byte, clusterHeaderSize)
	le.PutUint32(p[0:], uint32(len(records)))
	le.PutUint64(p[8:], generation)
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
	long := strings.Repeat("x", 32)
	bad := map[string][]byte{
		"short":            p[:10],
		"length":           p[:len(p)-1],
		"count":            clusterPayload(1, make([][]byte, 257)...)[:clusterHeaderSize],
		"unterminated":     clusterPayload(1, clusterRecord(long, "c", 1, 0, 1, 0)),
		"class":            clusterPayload(1, clusterRecord("a", long, 1, 0, 1, 0)),
		"devices":          clusterPayload(1, clusterRecord("a", "c", 1, 0, 17, 0)),
		"compute":          clusterPayload(1, clusterRecord("a", "c", 1, 0, 1, 101)),
		"flags":            clusterPayload(1, clusterRecord("a", "c", 32, 0, 1, 0)),
		"trailing garbage": append(clusterPayload(1, clusterRecord("a", "c", 1, 0, 1, 0)), 0),
	}
	for name, b := range bad {
		if _, err := parseCluster(b); err == nil {
			t.Errorf("%s: a malformed CLUSTER was taken", name)
		}
	}
}

func statusPayload(nprocs int, procVGPU uint32) []byte {
	p := make([]byte, statusHeaderSize+statusVGPUSize+nprocs*statusProcSize)
	le.PutUint32(p[0:], 1)
	le.PutUint32(p[4:], uint32(nprocs))
	le.PutUint32(p[12:], featureCluster|featureCompute)
	copy(p[24:], "0.1.0")
	v := p[statusHeaderSize:]
	copy(v, "train-0")
	le.PutUint32(v[32:], 1) // ndev
	le.PutUint32(v[40:], 3) // processes
	d := v[56:]
	copy(d, "GPU-0000")
	copy(d[48:], "Fake GPU")
	le.PutUint64(d[112:], 16<<30)
	le.PutUint64(d[120:], 1<<30)
	le.PutUint64(d[128:], 5)
	q := p[statusHeaderSize+statusVGPUSize:]
	for i := 0; i < nprocs; i++ {
		le.PutUint32(q[i*statusProcSize+8:], procVGPU)
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
	if _, err := parseStatus(statusPayload(1, 0)[:statusHeaderSize+statusVGPUSize]); err == nil {
		t.Error("a STATUS shorter than its counts was taken")
	}
	p := statusPayload(0, 0)
	copy(p[24:40], strings.Repeat("v", 16))
	if _, err := parseStatus(p); err == nil {
		t.Error("an unterminated version was taken")
	}
}

func TestReadFrame(t *testing.T) {
	payload := []byte("abc")
	got, err := readFrame(bytes.NewReader(frame(msgCluster, payload)), msgCluster)
	if err != nil || string(got) != "abc" {
		t.Fatalf("round trip: %q %v", got, err)
	}
	refuse := make([]byte, refuseSize)
	le.PutUint32(refuse, 1)
	copy(refuse[4:], "no such vGPU")
	_, err = readFrame(bytes.NewReader(frame(msgRefuse, refuse)), msgBound)
	var r *refusedError
	if !errors.As(err, &r) || r.reason != "no such vGPU" || r.code != 1 {
		t.Fatalf("REFUSE: %v", err)
	}
	bad := map[string][]byte{
		"magic":   append([]byte{1, 2, 3, 4}, frame(msgCluster, payload)[4:]...),
		"type":    frame(msgStatus, payload),
		"short":   frame(msgCluster, payload)[:14],
		"refuse":  frame(msgRefuse, refuse[:10]),
		"nothing": nil,
	}
	version := frame(msgCluster, payload)
	le.PutUint16(version[4:], 2)
	bad["version"] = version
	huge := frame(msgCluster, nil)
	le.PutUint32(huge[8:], protoMaxReply+1)
	bad["huge"] = huge
	for name, b := range bad {
		if _, err := readFrame(bytes.NewReader(b), msgCluster); err == nil {
			t.Errorf("%s: a bad frame was taken", name)
		}
	}
}

func TestBindRequest(t *testing.T) {
	b, err := bindRequest("train-0", 0)
	if err != nil || len(b) != bindSize || string(b[:8]) != "train-0\x00" {
		t.Fatalf("BIND %q %v", b, err)
	}
	if _, err := bindRequest(strings.Repeat("x", 32), 0); err == nil {
		t.Error("a name of 32 characters was sent")
	}
	bound := make([]byte, boundSize)
	copy(bound, "train-0")
	if v, cg, err := parseBound(bound); err != nil || v != "train-0" || cg != "" {
		t.Errorf("BOUND: %q %q %v", v, cg, err)
	}
	if _, _, err := parseBound(bound[:100]); err == nil {
		t.Error("a short BOUND was taken")
	}
}

func TestClassesOf(t *testing.T) {
	c := &cluster{VGPUs: []clusterVGPU{
		{Name: "train-10", Class: "train", Flags: clusterContainers},
		{Name: "train-2", Class: "train", Flags: clusterContainers | clusterBound},
		{Name: "train-3", Class: "train", Flags: clusterContainers | clusterUnhealthy, XID: 79},
		{Name: "old-0", Class: "old", Flags: clusterContainers | clusterRetired},
		{Name: "host", Flags: 0},
		{Name: "vm", Class: "vm", Flags: clusterContainers | clusterGuest},
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
