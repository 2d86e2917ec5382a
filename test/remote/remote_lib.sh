# What remote.sh and channels.sh share; sourced once $scenario, $build and
# $tmp are set (the fake GPU's state in $FAKEGPU_STATE).

# fail WHY...: the scenario fails, with the tails of what it wrote.
fail() {
    echo "FAIL ($scenario): $*" >&2
    for f in "$tmp"/*.out "$tmp"/*.err; do
        [ -s "$f" ] && { echo "---- $f ----"; tail -n 30 "$f"; } >&2
    done
    exit 1
}

# The guest's preload: libvgpu-cuda.so (after a sanitizer's runtime, in
# a sanitized build), not NVML, which has no remote driver.
guest_preload=
for lib in ${LD_PRELOAD:-}; do
    case $lib in *libvgpu-nvml.so) ;; *) guest_preload="$guest_preload $lib" ;; esac
done

# wait_for PATTERN FILE [SECONDS]: until FILE has a line of PATTERN, for at
# most SECONDS (5); its status says whether it came.
wait_for() {
    for _ in $(seq 1 $((${3:-5} * 50))); do
        grep -q "$1" "$2" && return 0
        sleep 0.02
    done
    return 1
}

# open_to_others: $tmp and the fake GPU's state open to processes of other
# users (executors never run as root).
open_to_others() {
    chmod 755 "$tmp"
    (umask 000 && : >>"$FAKEGPU_STATE") && chmod 666 "$FAKEGPU_STATE"
}

# start_mediator: vgpu-mediatord of $tmp/conf, its socket $tmp/sock, its
# executors with no image cache; $medpid once it serves.
medpid=
start_mediator() {
    env -u LD_PRELOAD VGPU_REMOTE_IMAGE_CACHE=off "$build/tools/vgpu-mediatord" --config "$tmp/conf" --foreground \
        >>"$tmp/med.err" 2>&1 &
    medpid=$!
    for _ in $(seq 1 500); do
        [ -S "$tmp/sock" ] && grep -q "serving" "$tmp/med.err" && return 0
        kill -0 "$medpid" 2>/dev/null || fail "the mediator exited"
        sleep 0.02
    done
    fail "the mediator did not start within 10 s"
}
