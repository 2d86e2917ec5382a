#!/usr/bin/env bash
# go_checks.sh SOURCE_ROOT BUILD_ROOT BUILT: vgpu-device-plugin's and the
# fake kubelet's Go, and the protocol package generated for the plugin, is
# gofmt'd and go vet clean, their unit tests pass (among them the plugin's
# TestNoLayoutLiterals: no number of the protocol of its own), and meson
# lists every source file (a change to one unlisted would not rebuild).
set -u
src=$1
build=$2
if [ "$3" != yes ]; then
    echo "# vgpu-device-plugin is not built (-Dkubernetes): skipped"
    exit 77
fi
status=0
fail() { echo "FAIL: $*" >&2; status=1; }
GO=${GO:-go}
export GO111MODULE=off GOENV=off GOPROXY=off GOFLAGS=-buildvcs=false CGO_ENABLED=0
unset GOROOT GOBIN

unformatted=$(gofmt -l "$src/tools/device-plugin" "$src/test/kubernetes/fake-kubelet")
[ -z "$unformatted" ] || fail "not gofmt'd: $unformatted"

# name SOURCE_DIR BUILD_DIR MESON_FILE: each program, in the GOPATH tree build.sh made.
check() {
    local name=$1 dir=$2 gopath=$3 mesonfile=$4
    local pkg=$gopath/src/vgpu.dev/cmd/$name
    [ -d "$pkg" ] || { fail "$pkg is not there: build first"; return; }
    # The package's files as the source has them now: the build links them
    # when a listed source changes, and a _test.go file is listed nowhere.
    find "$pkg" -maxdepth 1 -name '*.go' -type l -delete
    ln -s "$dir"/*.go "$pkg/"
    (cd "$pkg" && GOPATH="$gopath:/usr/share/gocode" "$GO" vet .) || fail "go vet $name"
    (cd "$pkg" && GOPATH="$gopath:/usr/share/gocode" "$GO" test -count=1 .) || fail "go test $name"
    for f in "$dir"/*.go; do
        case $f in *_test.go) continue ;; esac
        base=${f#"$src"/}
        base=${base#tools/device-plugin/}
        base=${base#test/kubernetes/}
        grep -q "'$base'" "$mesonfile" || fail "$mesonfile does not list $base"
    done
}
check vgpu-device-plugin "$src/tools/device-plugin" "$build/tools/device-plugin/gopath" \
    "$src/tools/device-plugin/meson.build"
check fake-kubelet "$src/test/kubernetes/fake-kubelet" "$build/test/kubernetes/gopath" \
    "$src/test/kubernetes/meson.build"

# The mediator protocol the plugin reads, generated from the C headers
# (tools/generate/gen_go_protocol.py): gofmt'd and go vet clean as well.
protocol=$build/tools/device-plugin/gopath/src/vgpu.dev/protocol
if [ -f "$protocol/protocol_gen.go" ]; then
    unformatted=$(gofmt -l "$protocol")
    [ -z "$unformatted" ] || fail "not gofmt'd: $unformatted (gen_go_protocol.py pipes it through gofmt)"
    (cd "$protocol" && GOPATH="$build/tools/device-plugin/gopath:/usr/share/gocode" "$GO" vet .) ||
        fail "go vet vgpu.dev/protocol"
else
    fail "$protocol/protocol_gen.go is not there: build first"
fi
exit $status
