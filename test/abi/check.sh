#!/usr/bin/env bash
# cuda_abi_matches_the_toolkit: the driver API that vgpu carries
# (include/vgpu/cuda_abi.h, the <cuda.h> of the default build) is the one a
# toolkit's cuda.h declares: the same layouts, values and prototypes.
#
#   check.sh PYTHON GENERATOR HEADER BUNDLED_DIR TOOLKIT_DIR CC [CC ARGS...]
#
# GENERATOR (gen_checks.py) writes layout.c, compiled against BUNDLED_DIR's
# cuda.h and TOOLKIT_DIR's, whose outputs must be identical, and
# prototypes.c, whose static assertions must hold against the toolkit's
# cuda.h with and without __CUDA_API_VERSION_INTERNAL. Exits 77 (skipped)
# where TOOLKIT_DIR has no cuda.h or PYTHON no pycparser (CI installs both).
python=$1 gen=$2 header=$3 bundled=$4 toolkit=$5
shift 5
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"

[ -f "$toolkit/cuda.h" ] ||
    skip "no cuda.h in $toolkit to compare include/vgpu/cuda_abi.h with (meson configure -Dcudainclude=DIR)"
"$python" -c 'import pycparser' 2>/dev/null ||
    skip "the Python module pycparser is missing, to read the carried header (apt-get install python3-pycparser)"
version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$toolkit/cuda.h")
temp_dir vgpu-cuda-abi
work=$tmp

counts=$("$python" "$gen" --cc "$*" "$header" "$work") || exit 1
status=0
for side in bundled toolkit; do
    eval dir=\$$side
    if ! { "$@" -std=gnu11 -Wall -D__CUDA_API_VERSION_INTERNAL -I"$dir" -o "$work/layout-$side" "$work/layout.c" 2>&1 &&
           "$work/layout-$side" >"$work/$side.txt"; }; then
        echo "FAIL: the layout program does not build or run against $dir/cuda.h (above); correct $header"
        status=1
    fi
done
if [ $status = 0 ] && ! diff -u --label "$header" --label "$toolkit/cuda.h" "$work/bundled.txt" "$work/toolkit.txt"; then
    echo "FAIL: the layouts or values above (-: carried, +: toolkit) differ; correct $header"
    status=1
fi
for internal in -D__CUDA_API_VERSION_INTERNAL -U__CUDA_API_VERSION_INTERNAL; do
    if ! "$@" -std=gnu11 -fsyntax-only $internal -I"$toolkit" "$work/prototypes.c" 2>&1; then
        echo "FAIL: declarations above differ from $toolkit/cuda.h ($internal); correct $header"
        status=1
    fi
done
[ $status = 0 ] && echo "$header matches $toolkit/cuda.h (CUDA_VERSION $version): $counts"
exit $status
