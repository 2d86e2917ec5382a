#!/usr/bin/env bash
# An Ollama-style server (test/ollama/server.go) and its runners under each
# way of installing vgpu, on the fake driver.  Usage: ollama.sh CELL
# Settings from meson (test/ollama/meson.build): OLLAMA_SERVER, OLLAMA_DIR
# (the ggml stand-ins and the runner), FAKE_DIR, BUILD_DIR, MESON, and the
# install's VGPU_LIBDIR, VGPU_BINDIR, VGPU_DATADIR.
#
# Each cell runs in a private mount namespace whose /etc/ld.so.cache lists
# the fake driver's directory, as a real machine's cache lists the driver's,
# so that processes started with a fresh environment find a driver the way
# they would there.  vgpu is installed with `meson install --destdir`.
cell=$1
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"
set -o pipefail

# The cells where the Go server loads vgpu by dlopen, not preloaded.
case $cell in symlink-dir | ld-so-conf-d | mediator) asan_cannot "$ASAN_IN_GO" ;; esac
[ -x "$OLLAMA_SERVER" ] ||
    skip "the Go server was not built: install golang-go (Go 1.19 or later) and run meson setup --reconfigure"
if [ -z "${OLLAMA_TEST_IN_NAMESPACE:-}" ]; then
    export OLLAMA_TEST_IN_NAMESPACE=1
    # As root (CI), or in a user namespace of its own where that is allowed.
    unshare -m --propagation private true 2>/dev/null && exec unshare -m --propagation private "$0" "$@"
    unshare -r -m --propagation private true 2>/dev/null && exec unshare -r -m --propagation private "$0" "$@"
    skip "unshare -m is refused here, and these cells need a private mount namespace (run them as root)"
fi

# meson's runner adds its build directories; no cell wants them.
unset LD_PRELOAD LD_LIBRARY_PATH
temp_dir vgpu-ollama
medpid=
execpid=
at_exit '[ -n "$medpid" ] && kill -9 "$medpid" && wait "$medpid"'
at_exit '[ -n "$execpid" ] && kill -9 "$execpid" && wait "$execpid"'

# What expect.sh checks against.  The vGPU is the fake's GPUs 1 and 0, in
# that order: each with its own PCI id and UUID, and 2 GiB.
# shellcheck source=test/ollama/expect.sh
. "$here/expect.sh"
out=$tmp/out
GiB=$((1 << 30))
quota=$((2 * GiB))
layer=$((256 << 20))
vgpu_devices=1,0
vgpu_pci=(0000:02:00.0 0000:01:00.0)
vgpu_uuid=(GPU-fa4e0000-0000-0000-0000-000000000001 GPU-fa4e0000-0000-0000-0000-000000000000)
whole_pci=0000:01:00.0
whole=$((16 * GiB)) # FAKEGPU_MEMORY's default
standalone=(VGPU_MEMORY_LIMIT=2G VGPU_VISIBLE_DEVICES=$vgpu_devices VGPU_BAR0=$tmp/bar0 VGPU_MEDIATOR_SOCKET=none)

show() {
    echo "--- server output"; cat "$out" 2>/dev/null
    echo "--- server stderr (vgpu's log)"; tail -n 40 "$tmp/err" 2>/dev/null
    [ -f "$tmp/med.log" ] && { echo "--- mediator log"; cat "$tmp/med.log"; }
    [ -f "$tmp/exec.log" ] && { echo "--- executor log"; tail -n 40 "$tmp/exec.log"; }
}

# ---- the machine: vgpu installed, the driver in the ld.so cache ----

root=$tmp/root
"$MESON" install -C "$BUILD_DIR" --destdir "$root" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
    die "meson install --destdir failed: $(tail -n 5 "$tmp/install.log")"
vgpu_dir=$root$VGPU_LIBDIR/vgpu # the symlink install's directory

# ldconfig_cache [DIR]: /etc/ld.so.cache becomes one that lists DIR first
# (as /etc/ld.so.conf.d/000-vgpu.conf would, docs/guide/running.md), then the
# driver's directory, then the machine's own directories.
ldconfig_cache() {
    { printf '%s\n' "$@" "$FAKE_DIR"; echo "include /etc/ld.so.conf"; } >"$tmp/ld.so.conf"
    # -X: make no links in the directories; only the cache is written.
    "$(command -v ldconfig || echo /sbin/ldconfig)" -X -f "$tmp/ld.so.conf" -C "$tmp/ld.so.cache" 2>/dev/null || die "ldconfig failed"
    mount --bind "$tmp/ld.so.cache" /etc/ld.so.cache || die "cannot bind-mount over /etc/ld.so.cache"
}

# The sanitizers' settings of a sanitized test run (CI's), for processes
# started from nothing: without them a sanitized library cannot load.
sanitizers=()
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS; do
    [ -n "${!v:-}" ] && sanitizers+=("$v=${!v}")
done

# serve ENV...: runs the server with exactly ENV (and PATH), from nothing,
# as systemd starts a service; its arguments come from $serve_args, and
# $serve_in (a command) runs it.
serve_args=()
serve_in=()
serve() {
    "${serve_in[@]}" env -i PATH="$PATH" HOME="$tmp" "${sanitizers[@]}" "$@" "$OLLAMA_SERVER" serve --lib-dir "$OLLAMA_DIR" \
        --lib-dir "$OLLAMA_DIR/cuda_v13" --runner "$OLLAMA_DIR/ollama-runner" --layer-mib $((layer >> 20)) \
        "${serve_args[@]}" >"$out" 2>"$tmp/err"
    echo "server exited with $?" >>"$tmp/err"
}

# dropin_env: the Environment= lines of the installed systemd drop-in,
# one VAR=VALUE per line, its absolute paths moved under the destdir.
dropin_env() {
    python3 - "$root$VGPU_DATADIR/vgpu/vgpu-preload.conf" "$root" <<'PY'
import re, shlex, sys
conf, root = sys.argv[1], sys.argv[2]
for line in open(conf):
    line = line.strip()
    if not line.startswith("Environment="):
        continue
    for assignment in shlex.split(line[len("Environment="):]):
        var, _, value = assignment.partition("=")
        print(var + "=" + re.sub(r"(^|[ :])/", lambda m: m.group(1) + root + "/", value))
PY
}

# ---- the cells ----

case $cell in
preload-dropin | rebuilt-environment | previous-by-uuid | previous-fallback)
    ldconfig_cache
    mapfile -t env_lines < <(dropin_env)
    [ ${#env_lines[@]} -gt 0 ] || die "no Environment= lines in the drop-in"
    case $cell in
    previous-by-uuid) serve_args=(--previous) ;;
    previous-fallback) serve_args=(--previous --nvml libnvidia-ml-absent.so.1) ;; # a container without NVML
    esac
    serve "${env_lines[@]}" "${standalone[@]}"
    ;;
vgpu-run)
    ldconfig_cache
    serve "$root$VGPU_BINDIR/vgpu-run" --memory 2G --devices $vgpu_devices --bar0 "$tmp/bar0" --socket none --
    ;;
symlink-dir)
    ldconfig_cache
    serve LD_LIBRARY_PATH="$vgpu_dir" "${standalone[@]}"
    ;;
ld-so-conf-d)
    ldconfig_cache "$vgpu_dir"
    serve "${standalone[@]}"
    ;;
mediator)
    # The mediator at its default socket, which a process with no VGPU_*
    # setting at all finds: /run/vgpu is a tmpfs of this namespace's own.
    ldconfig_cache "$vgpu_dir"
    mount -t tmpfs tmpfs /run && mkdir -p /run/vgpu || die "cannot mount a tmpfs on /run"
    printf '[mediator]\nsocket = /run/vgpu/mediator.sock\nstate_dir = /run/vgpu\n[vgpu.ollama]\ndevices = %s\nmemory = 2G\nuids = %s\n' \
        "$vgpu_devices" "$(id -u)" >"$tmp/mediatord.conf"
    env -i PATH="$PATH" "${sanitizers[@]}" VGPU_LOG=info "$BUILD_DIR/tools/vgpu-mediatord" --config "$tmp/mediatord.conf" --foreground \
        >"$tmp/med.log" 2>&1 &
    medpid=$!
    smi=("$BUILD_DIR/tools/vgpu-smi" --socket /run/vgpu/mediator.sock)
    for _ in $(seq 1 500); do
        "${smi[@]}" >/dev/null 2>&1 && break
        kill -0 $medpid 2>/dev/null || die "the mediator exited"
        sleep 0.02
    done
    "${smi[@]}" >/dev/null 2>&1 || die "the mediator did not answer within 10 s"
    serve
    ;;
remote)
    # A guest with no GPU and no driver: the fake driver's directory is an
    # empty tmpfs where the server and its runners run, and no ld.so cache
    # lists it.  They preload vgpu with VGPU_REMOTE naming an executor, which
    # runs on the host's (fake) GPUs under the vGPU's settings; CUDA and
    # NVML both come through it, and the discovery's second pass narrows the
    # devices with CUDA_VISIBLE_DEVICES in the guest.
    preload="$root$VGPU_LIBDIR/libvgpu-cuda.so $root$VGPU_LIBDIR/libvgpu-nvml.so"
    env -i PATH="$PATH" "${sanitizers[@]}" LD_PRELOAD="$preload" VGPU_REAL_LIBCUDA="$FAKE_DIR/libcuda.so.1" \
        VGPU_REAL_NVML="$FAKE_DIR/libnvidia-ml.so.1" "${standalone[@]}" VGPU_LOG=info VGPU_REMOTE_IMAGE_CACHE="$tmp/images" \
        "$BUILD_DIR/tools/vgpu-executor" --listen "$tmp/exec.sock" >"$tmp/exec.log" 2>&1 &
    execpid=$!
    for _ in $(seq 1 500); do
        [ -S "$tmp/exec.sock" ] && break
        sleep 0.02
    done
    [ -S "$tmp/exec.sock" ] || die "the executor did not listen within 10 s: $(tail -n 5 "$tmp/exec.log")"
    # shellcheck disable=SC2016 # expanded by the inner shell
    serve_in=(unshare -m --propagation private sh -c 'mount -t tmpfs none "$1" && shift && exec "$@"' hide "$FAKE_DIR")
    serve LD_PRELOAD="$preload" VGPU_REMOTE="$tmp/exec.sock" VGPU_LOG=info
    ;;
*)
    echo "unknown cell $cell"; exit 2 ;;
esac

# The server and its runners, Ollama's way, are in the vGPU in every cell.
if [ $cell = previous-fallback ]; then expect_vgpu_discovery libnvidia-ml-absent.so.1; else expect_vgpu_discovery; fi
expect_runner_in_vgpu ollama

case $cell in
rebuilt-environment)
    # LD_PRELOAD, LD_LIBRARY_PATH and the VGPU_* settings went with the
    # environment: the runner found the driver through the ld.so cache.
    expect_runner_outside scratch
    want "scratch runner" "$(line "runner label=scratch")" driver "$(realpath "$FAKE_DIR/libcuda.so.1")"
    msg=$("$root$VGPU_BINDIR/vgpu-run" --log info --dry-run -- "$OLLAMA_SERVER" 2>&1 >/dev/null)
    for words in "is a Go program" "as Ollama does" "from scratch" "outside the vGPU" "/etc/ld.so.conf.d" "vgpu-mediatord"; do
        case $msg in *"$words"*) ;; *) bad "vgpu-run --log info does not say \"$words\": $msg" ;; esac
    done
    [ $failed = 0 ] && ok "vgpu-run explains it: $msg"
    ;;
mediator)
    # A system-wide install and the mediator reach a runner whose
    # environment was built from scratch, too.
    expect_runner_in_vgpu scratch
    grep -q "admitted pid .* to vGPU ollama" "$tmp/med.log" || bad "the mediator logged no admission"
    ;;
previous-by-uuid | previous-fallback)
    source=nvml
    [ $cell = previous-fallback ] && source=cuMemGetInfo
    for k in 0 1; do
        l=$(line "discover pass=1 index=$k")
        want "device $k" "$l" uuid "${vgpu_uuid[$k]}"
        want "device $k" "$l" prev_source $source
        want "device $k" "$l" prev_total $quota
        within "device $k: free memory by $source" "$(field "$l" prev_free)"
    done
    [ $failed = 0 ] && ok "free memory by $source is within the quota of each device"
    ;;
esac

if [ $cell = remote ]; then
    # Every process of the guest went through the executor, none to a driver.
    grep -q "forwarding to the remote CUDA driver" "$tmp/err" || bad "the server did not say it is remote"
    ! grep -q "forwarding to the CUDA driver at" "$tmp/err" || bad "the server loaded a driver"
    [ "$(grep -c "serving guest process" "$tmp/exec.log")" -ge 4 ] ||
        bad "fewer processes of the guest than its server, probes and runner were served"
    [ $failed = 0 ] && ok "the server, its probes and its runner drove the vGPU through the executor, with no driver"
fi

[ $failed = 0 ] || { show; exit 1; }
exit 0
