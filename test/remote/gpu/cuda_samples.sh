#!/usr/bin/env bash
# The gpu suite's check of NVIDIA's CUDA samples on a remote GPU (docs/design/remote.md): those of
# https://github.com/NVIDIA/cuda-samples that drive the GPU through the driver API and check their
# own results: vectorAddDrv, matrixMulDrv, simpleTextureDrv (a texture object over an array, an
# image compared with a reference), simpleDrvRuntime (the runtime's memory and stream beside a
# module of the driver's), deviceQueryDrv, vectorAddMMAP (virtual memory: cuMemCreate, cuMemMap),
# threadMigration (contexts pushed and popped by threads), matrixMulDynlinkJIT (libcuda by dlopen,
# PTX compiled by cuModuleLoadDataEx), ptxjit (the JIT linker), those that compile their kernels
# with NVRTC and load the cubin (vectorAdd_nvrtc, matrixMul_nvrtc, simpleAtomicIntrinsics_nvrtc,
# inlinePTX_nvrtc, simpleAssert_nvrtc, whose kernel's assert must come back as
# CUDA_ERROR_ASSERT, BlackScholes_nvrtc, binomialOptions_nvrtc, quasirandomGenerator_nvrtc), and
# jitLto (LTO IR linked by nvJitLink).  Each is built here with nvcc (no CMake) for this
# machine's GPU, its kernels as the image it loads (a fatbin or PTX file beside it), then run
# twice: natively under an 8 GiB vGPU, and as a guest of an executor under the same vGPU, in a
# mount namespace where /dev holds no NVIDIA device and every NVIDIA driver library is an empty
# file (guest_lib.sh).  A sample is ok when both runs exit 0 and print its line of success
# ("Result = PASS", "Test passed", ...; for the few that print none, the line they print once
# their check has run, whose verdict is then their exit status); deviceQueryDrv must also print
# as natively, and simpleTextureDrv write the same image.
# Usage: CUDA_SAMPLES=DIR cuda_samples.sh BUILD_DIR [OUT_DIR] [SAMPLE...]   DIR: a checkout of
# cuda-samples (Common/, Samples/).  Skips (77) without a GPU, without root (the mount
# namespace), without nvcc (NVCC, else on $PATH, else /usr/local/cuda/bin/nvcc) or without
# CUDA_SAMPLES; prints "ok SAMPLE: ..." or "FAIL SAMPLE ..." lines and fails when one is FAIL.
# The kernels are built for CUDA_ARCH (90: sm_90), else the compute capability nvidia-smi gives
# the first GPU.  REMOTE_TRANSPORT=bar: the guests reach their executors through a VM's BAR, as
# frameworks.sh's do.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../../gpu/lib.sh"
# shellcheck source=test/remote/gpu/guest_lib.sh
. "$here/guest_lib.sh"
gpu_check "$@"
out=$(realpath "$out")
shift $(($# < 2 ? $# : 2))
need_root "the guests run in a mount namespace of their own"
need_private_mounts
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || skip "no nvcc (NVCC, on \$PATH or /usr/local/cuda/bin/nvcc)"
[ -n "${CUDA_SAMPLES:-}" ] || skip "no CUDA_SAMPLES (a checkout of https://github.com/NVIDIA/cuda-samples)"
if [ ! -d "$CUDA_SAMPLES/Common" ] || [ ! -d "$CUDA_SAMPLES/Samples" ]; then
    skip "CUDA_SAMPLES=$CUDA_SAMPLES has no Common/ and Samples/"
fi
samples_dir=$(realpath "$CUDA_SAMPLES")
# The toolkit: its headers, and its libraries, which the samples find by their RPATH whatever the
# loader's cache holds (the guests have no LD_LIBRARY_PATH): an RPATH, not a RUNPATH, so that it
# holds for libnvrtc's dlopen of its builtins too.
cuda=$(dirname "$(dirname "$(realpath "$nvcc")")")
cuda_lib=$cuda/lib64
[ -d "$cuda_lib" ] || cuda_lib=$cuda/lib
cccl=$cuda/include/cccl # libcu++'s headers (nv/, cuda/), under include/ itself before CUDA 13
[ -d "$cccl" ] || cccl=$cuda/include
arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}
[ -n "$arch" ] || arch=$("$cuda/bin/__nvcc_device_query" 2>/dev/null | tr ',' '\n' | head -1)
[[ $arch =~ ^[0-9]+$ ]] || { echo "FAIL: no GPU architecture (nvidia-smi gives no compute capability; set CUDA_ARCH)"; exit 1; }
names=("$@")
[ $# -gt 0 ] || names=(vectorAddDrv matrixMulDrv simpleTextureDrv simpleDrvRuntime deviceQueryDrv vectorAddMMAP
    threadMigration matrixMulDynlinkJIT ptxjit vectorAdd_nvrtc matrixMul_nvrtc simpleAtomicIntrinsics_nvrtc
    inlinePTX_nvrtc simpleAssert_nvrtc BlackScholes_nvrtc binomialOptions_nvrtc quasirandomGenerator_nvrtc jitLto)

# sample NAME: what the sample is, as its CMakeLists.txt builds it: $dir, its folder under
# Samples/; $srcs, its host sources; $image, "KIND SOURCE FILE" where it loads its kernels from
# FILE beside it, built from SOURCE as a fatbin or PTX (empty where it carries its kernels or
# compiles them itself); $files, what it reads beside it (copied there: images, the kernels
# NVRTC compiles and what they include); $cg, set where NVRTC includes cooperative groups from
# beside it; $libs and $cudart (none, or shared where it calls the runtime), what it links; $pass,
# its line of success (an ERE); $same, what must be as natively: out (what it prints) or a file
# it writes.  Status 1 for a NAME that is none of these.
sample() {
    image='' files=() cg='' libs=(-lcuda) cudart=none link=() same=''
    case $1 in
    vectorAddDrv)
        dir=0_Introduction/vectorAddDrv srcs=(vectorAddDrv.cpp)
        image="fatbin vectorAdd_kernel.cu vectorAdd_kernel64.fatbin" pass='^Result = PASS$' ;;
    matrixMulDrv)
        dir=0_Introduction/matrixMulDrv srcs=(matrixMulDrv.cpp)
        image="fatbin matrixMul_kernel.cu matrixMul_kernel64.fatbin" pass='Result = PASS$' ;;
    simpleTextureDrv) # prints no verdict: the comparison's is its exit status
        dir=0_Introduction/simpleTextureDrv srcs=(simpleTextureDrv.cpp)
        image="fatbin simpleTexture_kernel.cu simpleTexture_kernel64.fatbin"
        files=(data/teapot512.pgm data/ref_rotated.pgm) pass='^Comparing files$' same=teapot512_out.pgm ;;
    simpleDrvRuntime)
        dir=0_Introduction/simpleDrvRuntime srcs=(simpleDrvRuntime.cpp) cudart=shared
        image="fatbin vectorAdd_kernel.cu vectorAdd_kernel64.fatbin" pass='^Result = PASS$' ;;
    deviceQueryDrv)
        dir=1_Utilities/deviceQueryDrv srcs=(deviceQueryDrv.cpp) pass='^Result = PASS$' same=out ;;
    vectorAddMMAP)
        dir=0_Introduction/vectorAddMMAP srcs=(vectorAddMMAP.cpp multidevicealloc_memmap.cpp)
        image="fatbin vectorAdd_kernel.cu vectorAdd_kernel64.fatbin" pass='^Result = PASS$' ;;
    threadMigration) # each thread's line once its results are checked; the count's verdict is its exit status
        dir=2_Concepts_and_Techniques/threadMigration srcs=(threadMigration.cpp) libs=(-lcuda -lpthread)
        image="fatbin threadMigration_kernel.cu threadMigration_kernel64.fatbin" pass='ThreadProc\(\) Finished!$' ;;
    matrixMulDynlinkJIT) # its own cuInit and pointers named as the driver's functions (-no-pie, as its CMake links it)
        dir=0_Introduction/matrixMulDynlinkJIT libs=(-lcuda -ldl) cudart=shared link=(-Xcompiler -no-pie)
        srcs=(cuda_drvapi_dynlink.c matrixMulDynlinkJIT.cpp matrixMul_gold.cpp matrixMul_kernel_32_ptxdump.c
            matrixMul_kernel_64_ptxdump.c)
        pass='^Test run success!$' ;;
    ptxjit) # prints no verdict: the data's is its exit status
        dir=3_CUDA_Features/ptxjit srcs=(ptxjit.cpp) cudart=shared
        image="ptx ptxjit_kernel.cu ptxjit_kernel64.ptx" pass='^CUDA kernel launched$' ;;
    vectorAdd_nvrtc)
        dir=0_Introduction/vectorAdd_nvrtc srcs=(vectorAdd.cpp) files=(vectorAdd_kernel.cu)
        libs=(-lcuda -lnvrtc) pass='^Test PASSED$' ;;
    matrixMul_nvrtc)
        dir=0_Introduction/matrixMul_nvrtc srcs=(matrixMul.cpp) files=(matrixMul_kernel.cu) cg=1
        libs=(-lcuda -lnvrtc) pass='Result = PASS$' ;;
    simpleAtomicIntrinsics_nvrtc)
        dir=0_Introduction/simpleAtomicIntrinsics_nvrtc
        srcs=(simpleAtomicIntrinsics.cpp simpleAtomicIntrinsics_cpu.cpp) files=(simpleAtomicIntrinsics_kernel.cuh)
        libs=(-lcuda -lnvrtc) pass='completed, returned OK$' ;;
    inlinePTX_nvrtc)
        dir=2_Concepts_and_Techniques/inlinePTX_nvrtc srcs=(inlinePTX.cpp) files=(inlinePTX_kernel.cu)
        libs=(-lcuda -lnvrtc) pass='^Test Successful\.$' ;;
    simpleAssert_nvrtc) # its kernel's assert fails on purpose: cuCtxSynchronize must say so
        dir=0_Introduction/simpleAssert_nvrtc srcs=(simpleAssert.cpp) files=(simpleAssert_kernel.cu)
        libs=(-lcuda -lnvrtc) pass='^Device assert failed as expected$' ;;
    BlackScholes_nvrtc)
        dir=5_Domain_Specific/BlackScholes_nvrtc srcs=(BlackScholes.cpp BlackScholes_gold.cpp)
        files=(BlackScholes_kernel.cuh) libs=(-lcuda -lnvrtc) pass='^Test passed$' ;;
    binomialOptions_nvrtc)
        dir=5_Domain_Specific/binomialOptions_nvrtc
        srcs=(binomialOptions.cpp binomialOptions_gold.cpp binomialOptions_gpu.cpp)
        files=(binomialOptions_kernel.cu binomialOptions_common.h common_gpu_header.h realtype.h)
        libs=(-lcuda -lnvrtc) pass='^Test passed$' ;;
    quasirandomGenerator_nvrtc) # prints no verdict: the L1 norm's is its exit status
        dir=5_Domain_Specific/quasirandomGenerator_nvrtc srcs=(quasirandomGenerator.cpp quasirandomGenerator_gold.cpp)
        files=(quasirandomGenerator_kernel.cu quasirandomGenerator_common.h)
        libs=(-lcuda -lnvrtc) pass='^Shutting down\.\.\.$' ;;
    jitLto)
        dir=4_CUDA_Libraries/jitLto srcs=(jitLto.cpp) libs=(-lcuda -lnvrtc -lnvJitLink) pass='^PASSED!$' ;;
    *) return 1 ;;
    esac
}

# build NAME: the sample built into $out/build/NAME, beside what it reads there at run time.
build() {
    local name=$1 src b f kind ksrc kfile
    sample "$name" || { echo "$name: no such sample here"; return 1; }
    src=$samples_dir/Samples/$dir b=$out/build/$name
    [ -d "$src" ] || { echo "$src: not in CUDA_SAMPLES"; return 1; }
    rm -rf "$b" && mkdir -p "$b" || return 1
    for f in ${files[@]+"${files[@]}"}; do cp "$src/$f" "$b/" || return 1; done
    if [ -n "$cg" ]; then
        ln -s "$cuda/include/cooperative_groups.h" "$cuda/include/cooperative_groups" "$cccl/nv" "$cccl/cuda" "$b/" || return 1
    fi
    if [ -n "$image" ]; then
        read -r kind ksrc kfile <<<"$image"
        case $kind in
        fatbin) "$nvcc" -fatbin -gencode "arch=compute_$arch,code=sm_$arch" -I"$samples_dir/Common" -I"$src" \
            -o "$b/$kfile" "$src/$ksrc" || return 1 ;;
        ptx) "$nvcc" -ptx -arch "compute_$arch" -I"$samples_dir/Common" -I"$src" -o "$b/$kfile" "$src/$ksrc" || return 1 ;;
        esac
    fi
    "$nvcc" -O2 -I"$samples_dir/Common" -I"$src" -o "$b/$name" "${srcs[@]/#/$src/}" -cudart "$cudart" "${libs[@]}" \
        ${link[@]+"${link[@]}"} -Xlinker --disable-new-dtags -Xlinker -rpath -Xlinker "$cuda_lib"
}

run() { # NAME native|remote: the sample run in its folder, its output in $out/NAME.MODE(.err)
    local name=$1 mode=$2
    (
        cd "$out/build/$name" || exit 1
        if [ "$mode" = native ]; then
            LD_PRELOAD="$preload" VGPU_BAR0=$out/native.bar0 VGPU_MEMORY_LIMIT=8G timeout 300 "./$name"
        else
            hidden env -u LD_LIBRARY_PATH LD_PRELOAD="$preload" VGPU_REMOTE="$where" VGPU_LOG=info timeout 300 "./$name"
        fi
    ) </dev/null >"$out/$name.$mode" 2>"$out/$name.$mode.err"
}

# why_not NAME MODE STATUS: nothing where the run exited 0 and printed the sample's line of
# success (what sample NAME set last), else why not, with the end of what it printed.
why_not() {
    local name=$1 mode=$2 rc=$3 why
    if [ "$rc" != 0 ]; then
        why="exit status $rc"
    elif ! grep -Eq -- "$pass" "$out/$name.$mode"; then
        why="no line /$pass/"
    else
        return 0
    fi
    echo "$why: $(cat "$out/$name.$mode" "$out/$name.$mode.err" | grep -v '^vgpu.*info' | tail -4 | cut -c1-300 |
        tr '\n' ' ')"
}

start_executor "$out/executor.out"
mkdir -p "$out/build"
declare -A building
for s in "${names[@]}"; do
    (set -x; build "$s") >"$out/build/$s.log" 2>&1 &
    building[$s]=$!
done

exec > >(tee "$out/checks.txt")
echo "note: building with $nvcc for sm_$arch in $out/build"
failed=0
for s in "${names[@]}"; do
    if ! wait "${building[$s]}"; then
        echo "FAIL $s: not built: $(grep -v '^+' "$out/build/$s.log" | tail -4 | tr '\n' ' ')"
        failed=1
        continue
    fi
    sample "$s"
    file= # a file it writes, kept as $out/NAME.MODE.FILE
    [ "$same" = out ] || file=$same
    [ -z "$file" ] || rm -f "$out/build/$s/$file"
    t0=$(date +%s.%N)
    run "$s" native
    why=$(why_not "$s" native $?)
    if [ -n "$why" ]; then echo "FAIL $s natively: $why"; failed=1; continue; fi
    [ -z "$file" ] || mv "$out/build/$s/$file" "$out/$s.native.$file"
    t1=$(date +%s.%N)
    run "$s" remote
    why=$(why_not "$s" remote $?)
    if [ -n "$why" ]; then echo "FAIL $s remotely: $why"; failed=1; continue; fi
    t2=$(date +%s.%N)
    [ -z "$file" ] || mv "$out/build/$s/$file" "$out/$s.remote.$file"
    also=
    if [ "$same" = out ]; then
        if ! cmp -s "$out/$s.native" "$out/$s.remote"; then
            echo "FAIL $s: prints otherwise through the executor: $(diff "$out/$s.native" "$out/$s.remote" |
                grep '^[<>]' | head -4 | tr '\n' ' ')"
            failed=1
            continue
        fi
        also=", printing the same"
    elif [ -n "$file" ]; then
        if ! cmp -s "$out/$s.native.$file" "$out/$s.remote.$file"; then
            echo "FAIL $s: the $file it writes through the executor is not the one it writes natively"
            failed=1
            continue
        fi
        also=", writing the same $file"
    fi
    secs=$(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.1f s native, %.1f s remote", b - a, c - b }')
    echo "ok $s: \"$(grep -Em1 -- "$pass" "$out/$s.remote")\" natively and through the executor with no driver$also ($secs)"
done
grep -h "not carried\|no private table" "$out"/*.remote.err 2>/dev/null | sed 's/^vgpu\[[0-9]*\]: //' | sort | uniq -c |
    sed 's/^/note: /'
exit $failed
