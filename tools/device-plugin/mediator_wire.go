package main

// The mediator's frames (docs/reference/protocol.md): a header, little-endian, then
// the payload.  Everything read is checked as the C side checks it
// (common/contract/protocol/protocol.c) before any of it is used.

import (
	"bytes"
	"fmt"
	"io"

	// The protocol's constants and layouts, generated from
	// common/contract/protocol/protocol.h at build time (gen_go_protocol.py):
	// this package writes no number of the protocol itself.
	"vgpu.dev/protocol"
)

var msgNames = map[uint16]string{
	protocol.VGPU_MSG_REFUSE: "REFUSE", protocol.VGPU_MSG_STATUS: "STATUS", protocol.VGPU_MSG_COMPUTE: "COMPUTE",
	protocol.VGPU_MSG_BOUND: "BOUND", protocol.VGPU_MSG_CLUSTER: "CLUSTER",
}

func msgName(t uint16) string {
	if n, ok := msgNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", t)
}

// frame is a request: the header and its payload.
func frame(typ uint16, payload []byte) []byte {
	b := make([]byte, protocol.ProtoHeaderSize, protocol.ProtoHeaderSize+len(payload))
	protocol.PutProtoHeaderMagic(b, protocol.VGPU_PROTO_MAGIC)
	protocol.PutProtoHeaderVersion(b, protocol.VGPU_PROTO_VERSION)
	protocol.PutProtoHeaderType(b, typ)
	protocol.PutProtoHeaderLength(b, uint32(len(payload)))
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
	h := make([]byte, protocol.ProtoHeaderSize)
	if _, err := io.ReadFull(r, h); err != nil {
		return nil, fmt.Errorf("no answer: %w", err)
	}
	magic, version := protocol.ProtoHeaderMagic(h), protocol.ProtoHeaderVersion(h)
	typ, length := protocol.ProtoHeaderType(h), protocol.ProtoHeaderLength(h)
	if magic != protocol.VGPU_PROTO_MAGIC {
		return nil, fmt.Errorf("not the mediator's protocol (magic %#x)", magic)
	}
	if version != protocol.VGPU_PROTO_VERSION {
		return nil, fmt.Errorf("the mediator speaks protocol version %d, this plugin %d", version,
			protocol.VGPU_PROTO_VERSION)
	}
	if length > protocol.VGPU_PROTO_MAX_REPLY {
		return nil, fmt.Errorf("%s of %d bytes is over the %d a client reads", msgName(typ), length,
			protocol.VGPU_PROTO_MAX_REPLY)
	}
	if typ != want && typ != protocol.VGPU_MSG_REFUSE {
		return nil, fmt.Errorf("answered %s, want %s", msgName(typ), msgName(want))
	}
	p := make([]byte, length)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, fmt.Errorf("%s cut short: %w", msgName(typ), err)
	}
	if typ == protocol.VGPU_MSG_REFUSE {
		if length != protocol.MsgRefuseSize {
			return nil, fmt.Errorf("REFUSE has %d payload bytes, want %d", length, protocol.MsgRefuseSize)
		}
		reason, ok := cstring(protocol.MsgRefuseReason(p))
		if !ok {
			return nil, fmt.Errorf("malformed REFUSE")
		}
		return nil, &refusedError{code: protocol.MsgRefuseCode(p), reason: reason}
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
