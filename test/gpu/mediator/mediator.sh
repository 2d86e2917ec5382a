#!/usr/bin/env bash
# The gpu suite's mediator check: vgpu-mediatord serves two vGPUs on GPU 0
# (8 GiB and 4 GiB); a PyTorch process in each sees its own quota and fills
# it up to its OutOfMemoryError; vgpu-smi shows both; the driver's own
# per-process figures stay under each quota; killing one frees its memory
# in vgpu-smi at once.  Prints "ok ..." or "FAIL ..." lines.
# Usage: mediator.sh BUILD_DIR [OUT_DIR]   Skips (77) without a GPU.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../lib.sh"
gpu_check "$@"
sock=$out/mediator.sock
cat >"$out/mediatord.conf" <<CONF
[mediator]
socket = $sock
state_dir = $out/state
[vgpu.big]
devices = 0
memory = 8G
compute = 50
uids = $(id -u)
[vgpu.small]
devices = 0
memory = 4G
compute = 50
uids = $(id -u)
CONF
start_mediator "$out/mediatord.conf" "$sock" "$out/mediatord.log"
trap 'kill -9 $med ${A_PID:-} ${B_PID:-} 2>/dev/null' EXIT
export LD_PRELOAD="$preload" VGPU_MEDIATOR_SOCKET=$sock VGPU_LOG=info
# exec: the coprocess is Python itself, so its pid is the one to kill.
coproc A { VGPU_NAME=big VGPU_LOG_FILE=$out/big.log exec python3 "$clients_dir/quota_clients.py" fill 0 2>&1; }
A_PID=$A_PID
read -r a_line <&"${A[0]}"
coproc B { VGPU_NAME=small VGPU_LOG_FILE=$out/small.log exec python3 "$clients_dir/quota_clients.py" fill 0 2>&1; }
B_PID=$B_PID
read -r b_line <&"${B[0]}"
unset LD_PRELOAD
"$vgpu_smi" --socket "$sock" | tee "$out/vgpu-smi.txt"
"$vgpu_smi" --socket "$sock" --json >"$out/vgpu-smi.json"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$out/nvidia-smi.csv"
python3 - "$out" "$a_line" "$b_line" <<'PY' || echo "FAIL the checks of the two vGPUs did not run to the end"
import json, sys
out, a_line, b_line = sys.argv[1:4]
s = json.load(open(out + "/vgpu-smi.json"))
driver = {int(p): int(m) for p, m in (l.split(",") for l in open(out + "/nvidia-smi.csv") if l.strip())}
GiB = 1 << 30
def check(name, cond, detail):
    print(("ok " if cond else "FAIL ") + name + ": " + detail)
for line, name, quota in ((a_line, "big", 8 * GiB), (b_line, "small", 4 * GiB)):
    total = int(line.split()[1])
    check("vGPU %s: PyTorch sees its quota" % name, total == quota, line)
    check("vGPU %s: filling it ends in OutOfMemoryError" % name, line.endswith("OutOfMemoryError"), line)
    v = next(v for v in s["vgpus"] if v["name"] == name)
    used = v["devices"][0]["memory_used"]
    procs = [p for p in s["processes"] if p["vgpu"] == name]
    check("vgpu-smi shows vGPU %s" % name, len(procs) == 1 and 0 < used <= quota,
          "%d MiB of %d MiB, process %s" % (used >> 20, quota >> 20, [(p["pid"], p["command"]) for p in procs]))
    pid = procs[0]["pid"] if procs else -1
    real = driver.get(pid)
    check("vGPU %s: the driver counts its process under the quota" % name, real is not None and real * (1 << 20) <= quota,
          "nvidia-smi: %s MiB for pid %d (vgpu counts %d MiB)" % (real, pid, used >> 20))
PY
# Killing the 8 GiB vGPU's process frees its memory at once: timed on the
# vGPU's BAR0 status, read raw from the window mediator_client is given as a
# member of vGPU big (vgpu preloaded), the window vgpu-smi reads through the
# mediator.
a_pid=$(python3 -c "import json; s=json.load(open('$out/vgpu-smi.json')); print([p['pid'] for p in s['processes'] if p['vgpu']=='big'][0])" 2>/dev/null)
if [ -z "$a_pid" ]; then
    echo "FAIL vgpu-smi lists no process in vGPU big to kill"
elif timing=$(LD_PRELOAD="$preload" VGPU_LOG=warn \
        "$build/test/mediator/mediator_client" kill-time "$a_pid" big 0 0 2>&1); then
    echo "ok killing vGPU big's process returned its memory: $(echo "$timing" | head -1)"
else
    echo "FAIL killing vGPU big's process: $timing"
fi
used=$("$vgpu_smi" --socket "$sock" --json | python3 -c "import json,sys; s=json.load(sys.stdin); print(s['vgpus'][0]['devices'][0]['memory_used'], len(s['processes']))")
if [ "$used" = "0 1" ]; then echo "ok vgpu-smi then shows vGPU big empty and one process left"
else echo "FAIL vgpu-smi shows '$used' (vGPU big's use, processes) after the kill"; fi
"$vgpu_smi" --socket "$sock" | tee "$out/vgpu-smi-after.txt"
echo >&"${B[1]}"
wait "$B_PID" 2>/dev/null
grep -h "admitted\|ended" "$out/mediatord.log"
