package main

// The mediator's frames (docs/reference/protocol.md): a 12-byte header, little-endian,
// then the payload.  Everything read is checked as the C side checks it
// (common/contract/protocol/protocol.c) before any of it is used.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

const (
	protoMagic      = 0x4d504756 // "VGPM"
	protoVersion    = 1
	protoHeaderSize = 12
	protoMaxReply   = 4 << 20 // the largest payload a client reads

	msgRefuse         = 3
	msgStatusRequest  = 6
	msgStatus         = 7
	msgComputeRequest = 10
	msgCompute        = 11
	msgBind           = 14
	msgBound          = 15
	msgClusterRequest = 16
	msgCluster        = 17

	nameLen   = 32  // a vGPU's name, NUL included
	reasonLen = 492 // a refusal's text, NUL included
	cgroupLen = 480 // a cgroup v2 path, NUL included
	maxDevs   = 16  // devices of a vGPU

	refuseSize = 4 + reasonLen
	bindSize   = nameLen + 4 + 4
	boundSize  = nameLen + cgroupLen

	// STATUS's features: what else the mediator answers.
	featureCompute = 2
	featureCluster = 4
)

var le = binary.LittleEndian

var msgNames = map[uint16]string{
	msgRefuse: "REFUSE", msgStatus: "STATUS", msgCompute: "COMPUTE", msgBound: "BOUND", msgCluster: "CLUSTER",
}

func msgName(t uint16) string {
	if n, ok := msgNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", t)
}

// frame is a request: the header and its payload.
func frame(typ uint16, payload []byte) []byte {
	b := make([]byte, protoHeaderSize, protoHeaderSize+len(payload))
	le.PutUint32(b[0:], protoMagic)
	le.PutUint16(b[4:], protoVersion)
	le.PutUint16(b[6:], typ)
	le.PutUint32(b[8:], uint32(len(payload)))
	return append(b, payload...)
}

// refusedError is the mediator's REFUSE: it closes the connection after it.
type refusedError struct {
	code   uint32
	reason string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("refused (code %d): %s", e.code, e.reason)
}

// readFrame reads one frame of type want (or a REFUSE, returned as a
// *refusedError) and returns its payload.
func readFrame(r io.Reader, want uint16) ([]byte, error) {
	var h [protoHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("no answer: %w", err)
	}
	magic, version, typ, length := le.Uint32(h[0:]), le.Uint16(h[4:]), le.Uint16(h[6:]), le.Uint32(h[8:])
	if magic != protoMagic {
		return nil, fmt.Errorf("not the mediator's protocol (magic %#x)", magic)
	}
	if version != protoVersion {
		return nil, fmt.Errorf("the mediator speaks protocol version %d, this plugin %d", version, protoVersion)
	}
	if length > protoMaxReply {
		return nil, fmt.Errorf("%s of %d bytes is over the %d a client reads", msgName(typ), length, protoMaxReply)
	}
	if typ != want && typ != msgRefuse {
		return nil, fmt.Errorf("answered %s, want %s", msgName(typ), msgName(want))
	}
	p := make([]byte, length)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, fmt.Errorf("%s cut short: %w", msgName(typ), err)
	}
	if typ == msgRefuse {
		if length != refuseSize {
			return nil, fmt.Errorf("REFUSE has %d payload bytes, want %d", length, refuseSize)
		}
		reason, ok := cstring(p[4:])
		if !ok {
			return nil, fmt.Errorf("malformed REFUSE")
		}
		return nil, &refusedError{code: le.Uint32(p), reason: reason}
	}
	return p, nil
}

// cstring is a char[N] field up to its NUL; false when it has none.
func cstring(b []byte) (string, bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", false
	}
	return string(b[:i]), true
}

// putCString writes s into a char[len(dst)] field, NUL-terminated.
func putCString(dst []byte, s string) error {
	if len(s) >= len(dst) || bytes.IndexByte([]byte(s), 0) >= 0 {
		return fmt.Errorf("%q does not fit a %d-byte name", s, len(dst))
	}
	copy(dst, s)
	return nil
}
