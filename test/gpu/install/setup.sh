#!/usr/bin/env bash
# The gpu suite's vgpu-setup check, on the real driver: a service's drop-in
# written by vgpu-setup (LD_PRELOAD, then --symlink) runs PyTorch in its vGPU
# when its Environment= lines are all the program gets (test/setup/dropin_run.py,
# no systemd needed: nothing of this machine's /etc is touched, the system is
# a fake root under OUT_DIR); and `vgpu-setup cdi` names GPU 0's real device
# file and UUID, and its spec validates where python3-jsonschema is.
# Prints "ok ..." or "FAIL ..." lines.
# Usage: setup.sh BUILD_DIR [OUT_DIR]   Skips (77) without a GPU.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../lib.sh"
gpu_check "$@"
src=$source_dir
rm -rf "${out:?}/root" "${out:?}/lib"
R=$out/root
lib=$out/lib
sh "$src/test/setup/install_vgpu.sh" "$build" "$R$lib" "$lib"
mkdir -p "$R/usr/lib/systemd/system"
printf '[Service]\nExecStart=/usr/bin/python3 -m server\n' >"$R/usr/lib/systemd/system/torch.service"
quota=$((4 << 30))
setup() { "$vgpu_setup" "$@" --root "$R" --libdir "$lib" --systemctl /bin/true; }

for mode in preload symlink; do
    flag=; [ $mode = symlink ] && flag=--symlink
    rm -f "$out/torch.bar0"
    if ! setup enable --service torch $flag --memory 4G --devices 0 --bar0 "$out/torch.bar0" \
        >"$out/enable-$mode.txt" 2>&1; then
        echo "FAIL vgpu-setup enable ($mode): $(cat "$out/enable-$mode.txt")"
        continue
    fi
    cp "$R/etc/systemd/system/torch.service.d/vgpu.conf" "$out/vgpu-$mode.conf"
    # PATH and HOME are the machine's (where its python3 and PyTorch are); the rest is the drop-in's.
    timeout 300 python3 "$src/test/setup/dropin_run.py" --machine "PATH=$PATH" --machine "HOME=${HOME:-/root}" \
        "$R/etc/systemd/system/torch.service.d/vgpu.conf" -- "$(command -v python3)" "$clients_dir/quota_clients.py" \
        torch "$quota" >"$out/torch-$mode.txt" 2>&1
    sed "s/^\(ok\|FAIL\) /\1 drop-in ($mode): /" "$out/torch-$mode.txt" | grep -E '^(ok|FAIL) '
    grep -qE '^(ok|FAIL) ' "$out/torch-$mode.txt" ||
        echo "FAIL drop-in ($mode): PyTorch printed no check: $(tail -5 "$out/torch-$mode.txt" | tr '\n' ' ')"
    setup disable --service torch >/dev/null 2>&1
done

# cdi: the real minor number and UUID of GPU 0, from the driver's NVML.
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0)
if "$vgpu_setup" cdi --standalone --devices 0 --memory 4G --libdir "$lib" --output - \
    >"$out/cdi.yaml" 2>"$out/cdi.err"; then
    node=$(grep -o '/dev/nvidia[0-9]\+' "$out/cdi.yaml" | head -1)
    if [ -c "$node" ] && grep -q "VGPU_VISIBLE_DEVICES=$uuid\"" "$out/cdi.yaml"; then
        echo "ok cdi names GPU 0 as $node and $uuid"
    else
        echo "FAIL cdi: GPU 0 is $uuid; the spec names $(grep -E 'nvidia[0-9]|VGPU_VISIBLE' "$out/cdi.yaml" | tr -s ' \n' ' ')"
    fi
    if python3 -c 'import jsonschema, yaml' 2>/dev/null; then
        if python3 "$src/test/setup/validate_cdi.py" "$src/test/setup/cdi-schema.json" "$out/cdi.yaml" \
            >"$out/cdi-valid.txt" 2>&1; then
            echo "ok cdi spec validates"
        else
            echo "FAIL cdi spec: $(cat "$out/cdi-valid.txt")"
        fi
    fi
else
    echo "FAIL vgpu-setup cdi: $(cat "$out/cdi.err")"
fi
