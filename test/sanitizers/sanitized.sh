# Sourced by test scripts.  asan_cannot REASON: in a build with
# AddressSanitizer (meson sets VGPU_TEST_SANITIZE, test/sanitizers/meson.build),
# exits 77, which meson counts as a skip, saying REASON; elsewhere, nothing.
asan_cannot() {
    case ${VGPU_TEST_SANITIZE:-none} in
    *address*)
        echo "SKIP: this build has AddressSanitizer (-Db_sanitize=$VGPU_TEST_SANITIZE), and $*"
        exit 77 ;;
    esac
}

# The ASan runtime (a dependency of every sanitized library, the fake
# driver's too) loaded by dlopen into a Go program that is already running.
ASAN_IN_GO="its runtime cannot be loaded into a Go program that is already running (dlopen of a sanitized library): the Go runtime's heap lies where ASan's shadow memory must go (\"Shadow memory range interleaves with an existing memory mapping\"); the cells that preload vgpu into Go run"
