#!/usr/bin/env bash
# go_checks.sh SOURCE_ROOT BUILD_ROOT BUILT: vgpu-device-plugin's and the
# fake kubelet's Go is gofmt'd and go vet clean, their unit tests pass, and
# meson lists every source file (a change to one unlisted would not rebuild).
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
exit $status
