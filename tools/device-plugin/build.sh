#!/bin/sh
# build.sh OUTPUT PACKAGE_DIR GOPATH_DIR PROTO_DIR [PROTOCOL_GO]: builds the
# Go program whose package main is PACKAGE_DIR's *.go into OUTPUT, offline,
# in GOPATH mode (Debian's Go packages under /usr/share/gocode).  GOPATH_DIR,
# in the build directory, gets the tree the go tool wants:
#   src/vgpu.dev/api/deviceplugin/v1beta1/api.pb.go  generated from PROTO_DIR
#   src/vgpu.dev/api/podresources/v1/api.pb.go       by protoc (plugins=grpc)
#   src/vgpu.dev/protocol/protocol_gen.go            PROTOCOL_GO, the mediator
#                  protocol generated from the C headers (gen_go_protocol.py)
#   src/vgpu.dev/cmd/NAME/*.go                       symlinks to PACKAGE_DIR's
# Nothing generated lands in the source tree.  The go tool's cache is
# GOPATH_DIR/../go-cache unless GOCACHE says otherwise.
set -eu
out=$1
pkg=$(realpath "$2")
gopath=$3
protos=$(realpath "$4")
protocol=${5:-}
mkdir -p "$gopath"
gopath=$(realpath "$gopath")

export GO111MODULE=off GOENV=off GOPROXY=off GOFLAGS=-buildvcs=false CGO_ENABLED=0
export GOPATH="$gopath:/usr/share/gocode"
export GOCACHE="${GOCACHE:-$(dirname "$gopath")/go-cache}"
unset GOROOT GOBIN

GO=${GO:-go}
PROTOC=${PROTOC:-protoc}

# The generated packages: written beside, then moved in only when they
# changed, so that the go tool's view of them is stable across builds.
for api in deviceplugin/v1beta1 podresources/v1; do
    dir=$gopath/src/vgpu.dev/api/$api
    mkdir -p "$dir"
    gen=$(mktemp -d "$gopath/gen.XXXXXX")
    "$PROTOC" -I "$protos" --go_out="plugins=grpc,paths=source_relative:$gen" "$api/api.proto"
    if ! cmp -s "$gen/$api/api.pb.go" "$dir/api.pb.go"; then
        mv "$gen/$api/api.pb.go" "$dir/api.pb.go"
    fi
    rm -rf "$gen"
done

if [ -n "$protocol" ]; then
    dir=$gopath/src/vgpu.dev/protocol
    mkdir -p "$dir"
    cmp -s "$protocol" "$dir/protocol_gen.go" || cp "$protocol" "$dir/protocol_gen.go"
fi

# The program's package: one symlink per source file (none left of a file
# since removed).
name=$(basename "$out")
cmd=$gopath/src/vgpu.dev/cmd/$name
mkdir -p "$cmd"
find "$cmd" -maxdepth 1 -name '*.go' -type l -delete
for f in "$pkg"/*.go; do
    ln -s "$f" "$cmd/$(basename "$f")"
done

case $out in /*) ;; *) out=$(pwd)/$out ;; esac
cd "$cmd"
exec "$GO" build -trimpath -o "$out" .
