# What remote.sh and channels.sh share; sourced once $scenario and $build
# are set.
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/../common/lib.sh"
use_build "$build"
client=$build/test/remote/remote_client
me=$(id -u)

# remote_test_dir NAME [PARENT]: the scenario's $tmp, its logs' ends shown
# by a failure, the fake GPU's state there (one for every process), and
# nothing of the caller's vGPU settings.
medpid=
remote_test_dir() {
    temp_dir "$@"
    at_exit '[ -n "$medpid" ] && kill "$medpid"'
    fail_logs="$tmp/*.out $tmp/*.err"
    fake_gpu shared
}

# The guest's preload: libvgpu-cuda.so (after a sanitizer's runtime, in
# a sanitized build), not NVML, which has no remote driver.
guest_preload=
for lib in ${LD_PRELOAD:-}; do
    case $lib in *libvgpu-nvml.so) ;; *) guest_preload="$guest_preload $lib" ;; esac
done

# open_to_others: $tmp and the fake GPU's state open to processes of other
# users (executors never run as root).
open_to_others() {
    chmod 755 "$tmp"
    (umask 000 && : >>"$FAKEGPU_STATE") && chmod 666 "$FAKEGPU_STATE"
}

# start_mediator: vgpu-mediatord of $tmp/conf, its socket $tmp/sock, its
# executors with no image cache; $medpid once it serves.
start_mediator() {
    env -u LD_PRELOAD VGPU_REMOTE_IMAGE_CACHE=off "$vgpu_mediatord" --config "$tmp/conf" --foreground \
        >>"$tmp/med.err" 2>&1 &
    medpid=$!
    for _ in $(seq 1 500); do
        [ -S "$tmp/sock" ] && grep -q "serving" "$tmp/med.err" && return 0
        kill -0 "$medpid" 2>/dev/null || fail "the mediator exited"
        sleep 0.02
    done
    fail "the mediator did not start within 10 s"
}
