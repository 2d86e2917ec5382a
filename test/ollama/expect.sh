# What an Ollama-style server (server.go) and its runners must have seen,
# read from the server's output; sourced by test/ollama/ollama.sh (the fake
# driver) and test/gpu/install/ollama.sh (a GPU).  The caller sets:
#   out       the file holding the server's standard output
#   cell      the name FAIL lines start with
#   quota     the vGPU's memory per device, in bytes
#   layer     the runner's layer size, in bytes
#   vgpu_pci  an array: the PCI bus id of each vGPU device, in the vGPU's order
#   whole_pci the PCI bus id of the machine's GPU 0
#   whole     that GPU's memory in bytes, or empty where it is not known exactly
# and a function `show` that prints what helps to diagnose a failure.
# ok (test/common/lib.sh's) says "ok - $cell: ...".
scenario=$cell
failed=0
bad() { echo "FAIL $cell: $*"; failed=1; }
die() { bad "$@"; show; exit 1; }

# line PREFIX: the first output line that starts with PREFIX (a regex), then a space.
line() { grep -m1 -E -- "^$1( |\$)" "$out"; }
# field LINE KEY: KEY's value in a line of KEY=VALUE words, quotes removed.
field() {
    local v
    v=$(sed -n "s/.*\\b$2=\"\\([^\"]*\\)\".*/\\1/p" <<<"$1")
    [ -n "$v" ] || v=$(sed -n "s/.*\\b$2=\\([^ \"]*\\).*/\\1/p" <<<"$1")
    printf '%s' "$v"
}
# want WHAT LINE KEY EXPECTED
want() {
    local got
    got=$(field "$2" "$3")
    [ "$got" = "$4" ] || bad "$1: $3 is '$got', expected '$4' ($2)"
}
# within WHAT VALUE: 0 < VALUE <= quota
within() { [ "${2:-0}" -gt 0 ] && [ "$2" -le "$quota" ] || bad "$1 is '$2', not within the quota of $quota"; }

# expect_vgpu_discovery [NVML_NAME]: discovery found the vGPU in both
# passes, in CUDA, in ggml's backend, and in NVML unless NVML_NAME, a
# library that is not there, stood for NVML.
expect_vgpu_discovery() {
    local l k n=${#vgpu_pci[@]} nvml_count=${#vgpu_pci[@]} errors ids before=$failed
    l=$(line "discover pass=1 cuda_count=[0-9]+") || die "no discovery result"
    [ $# = 1 ] && nvml_count=0
    want "discovery" "$l" cuda_count "$n"
    want "discovery" "$l" nvml_count $nvml_count
    for ((k = 0; k < n; k++)); do
        ids=${ids:+$ids,}$k
        l=$(line "discover pass=1 index=$k") || { bad "discovery lists no device $k"; continue; }
        want "device $k" "$l" total "$quota"
        want "device $k" "$l" pci "${vgpu_pci[$k]}"
        want "device $k, as ggml's backend sees it" "$l" ggml_total "$quota"
        within "device $k: ggml's free memory" "$(field "$l" ggml_free)"
        l=$(line "discover pass=2 id=$k count=[0-9]+") || { bad "no second pass for device $k"; continue; }
        want "second pass, CUDA_VISIBLE_DEVICES=$k" "$l" count 1
        want "second pass, CUDA_VISIBLE_DEVICES=$k" "$l" pci "${vgpu_pci[$k]}"
        want "second pass, CUDA_VISIBLE_DEVICES=$k" "$l" total "$quota"
    done
    errors=$(grep '^discover.* error=' "$out" | grep -v "${1:-no NVML was left out}")
    [ -z "$errors" ] || bad "discovery reported errors: $errors"
    l=$(line "server library=[a-z]+") || die "the server chose nothing"
    want "the server's choice" "$l" library cuda
    want "the server's choice" "$l" gpus "$ids"
    [ $failed = "$before" ] &&
        ok "discovery shows $n device(s) of $quota bytes in CUDA and ggml (NVML: $nvml_count), PCI ${vgpu_pci[*]}"
}

# expect_runner_in_vgpu LABEL: the runner saw the vGPU and stopped at its quota.
expect_runner_in_vgpu() {
    local l layers before=$failed
    l=$(line "runner label=$1") || die "the $1 runner printed nothing"
    want "$1 runner" "$l" devices ${#vgpu_pci[@]}
    want "$1 runner" "$l" pci "${vgpu_pci[0]}"
    want "$1 runner" "$l" total "$quota"
    want "$1 runner" "$l" stop CUDA_ERROR_OUT_OF_MEMORY
    layers=$(field "$l" layers)
    [ "${layers:-0}" -ge 1 ] && [ $((layers * layer)) -le "$quota" ] ||
        bad "$1 runner: $layers layers of $layer bytes do not fit the quota of $quota"
    want "$1 runner" "$(line "server runner=$1")" exit 0
    [ $failed = "$before" ] && ok "the $1 runner sees $quota bytes and gets $layers layers of $layer"
}

# expect_runner_outside LABEL: the runner saw the whole GPU, past the quota.
expect_runner_outside() {
    local l layers total before=$failed
    l=$(line "runner label=$1") || die "the $1 runner printed nothing"
    want "$1 runner" "$l" pci "$whole_pci"
    total=$(field "$l" total)
    if [ -n "$whole" ]; then want "$1 runner" "$l" total "$whole"
    elif [ "${total:-0}" -le "$quota" ]; then bad "$1 runner: it sees $total bytes, no more than the quota"; fi
    layers=$(field "$l" layers)
    [ $((${layers:-0} * layer)) -gt "$quota" ] || bad "$1 runner: $layers layers of $layer bytes: it was held to the quota"
    [ $failed = "$before" ] && ok "the $1 runner runs outside the vGPU: the whole GPU ($total bytes), $layers layers"
}
