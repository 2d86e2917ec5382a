# Sourced by matrix.sh and test/gpu/install/loadorder.sh (after
# test/common/lib.sh): the system-wide load paths (/etc/ld.so.cache,
# /etc/ld.so.preload) for one command only, in a private mount namespace,
# so that the machine's own files are never touched.

# ld_cache WORK_DIR CACHE LINE...: an ld.so cache built (ldconfig -C) from a
# config whose ld.so.conf.d entries hold the LINEs in order: directories, or
# "include FILE" for a config of the machine's.
ld_cache() {
    local work=$1 cache=$2 n=0
    shift 2
    mkdir -p "$work/ld.so.conf.d"
    for line in "$@"; do
        echo "$line" >"$work/ld.so.conf.d/$(printf %03d $n)-entry.conf"
        n=$((n + 1))
    done
    echo "include $work/ld.so.conf.d/*.conf" >"$work/ld.so.conf"
    ldconfig -X -C "$cache" -f "$work/ld.so.conf"
}

# private_etc WORK_DIR CACHE PRELOAD COMMAND...: runs COMMAND with CACHE over
# /etc/ld.so.cache and PRELOAD over /etc/ld.so.preload (either "": left as
# it is).  Exits 77 where no private mount namespace can be made.
private_etc() {
    local work=$1 cache=$2 preload=$3
    shift 3
    local unshare=(unshare -m --propagation private)
    if ! "${unshare[@]}" true 2>/dev/null; then
        unshare=(unshare -r -m --propagation private) # not root: a user namespace of our own
        if ! "${unshare[@]}" true 2>"$work/unshare.err"; then
            skip "cannot make a private mount namespace for /etc ($(cat "$work/unshare.err")); run as root"
        fi
    fi
    mkdir -p "$work/etc-upper" "$work/etc-work"
    "${unshare[@]}" sh -ec '
        cache=$1 preload=$2 upper=$3 work=$4
        shift 4
        if { [ -n "$preload" ] && [ ! -e /etc/ld.so.preload ]; } || { [ -n "$cache" ] && [ ! -e /etc/ld.so.cache ]; }; then
            # Nothing to bind over: /etc, with the new files in a layer above it.
            mount -t overlay overlay -o "lowerdir=/etc,upperdir=$upper,workdir=$work" /etc
            [ -z "$preload" ] || : >>/etc/ld.so.preload
            [ -z "$cache" ] || : >>/etc/ld.so.cache
        fi
        [ -z "$cache" ] || mount --bind "$cache" /etc/ld.so.cache
        [ -z "$preload" ] || mount --bind "$preload" /etc/ld.so.preload
        exec "$@"' sh "$cache" "$preload" "$work/etc-upper" "$work/etc-work" "$@"
}
