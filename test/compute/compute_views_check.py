"""What compute.sh's mediated-views-show-shares-held-time-and-utilization
asserts of vgpu-smi --json (two snapshots 1.5 s apart), vgpu-smi's table and
the metrics page, with busy tenants of vGPUs a (25%) and b (75%) on fake
GPU 0 and an idle process of vGPU idle (a 50% cap) on fake GPU 1.
Usage: compute_views_check.py TMP PID_A PID_B PID_IDLE"""
import json
import re
import socket
import sys

tmp = sys.argv[1]
pids = dict(zip(("a", "b", "idle"), map(int, sys.argv[2:5])))
first, second = (json.load(open(f"{tmp}/{n}.json")) for n in ("first", "second"))
dev = {v["name"]: v["devices"][0] for v in second["vgpus"]}
use = {n: d["compute_use"] for n, d in dev.items()}
before = {v["name"]: v["devices"][0]["compute_use"] for v in first["vgpus"]}
proc = {p["vgpu"]: p for p in second["processes"]}
errors = []


def want(ok, what):
    if not ok:
        errors.append(what)


interval = second["mediator"]["compute_interval_ms"]
want(interval is not None and 900 <= interval <= 1600, f"the interval is {interval} ms, want about 1000")
for n, share, mode in (("a", 25, "share"), ("b", 75, "share"), ("idle", 50, "cap")):
    want(dev[n]["compute"] == share and use[n]["mode"] == mode and use[n]["arbitrated"],
         f"{n}: share {dev[n]['compute']} {use[n]['mode']}, arbitrated {use[n]['arbitrated']}; "
         f"want {share} {mode}, arbitrated")
    for key in ("held_percent", "utilization_percent"):
        want(use[n][key] is not None and 0 <= use[n][key] <= 100, f"{n}: {key} is {use[n][key]}, want 0..100")
for n in ("a", "b"):
    want(use[n]["busy_ns"] > before[n]["busy_ns"] + 100e6,
         f"{n}: the GPU time charged went from {before[n]['busy_ns']} to {use[n]['busy_ns']} ns in 1.5 s")
    got = proc[n]["utilization_percent"][0]
    want(proc[n]["pid"] == pids[n] and got is not None and abs(got - use[n]["utilization_percent"]) < 0.5,
         f"{n}: its process {proc[n]['pid']} (want {pids[n]}) used {got}%, "
         f"its vGPU {use[n]['utilization_percent']}%")
if not errors:
    # What the arbiter gives, within what a loaded 2-core machine allows.
    want(use["b"]["held_percent"] > use["a"]["held_percent"] and 8 <= use["a"]["held_percent"] <= 45,
         f"held: a {use['a']['held_percent']}%, b {use['b']['held_percent']}%; want a 8..45 and b more")
    want(use["b"]["utilization_percent"] > use["a"]["utilization_percent"] and
         3 <= use["a"]["utilization_percent"] <= 45,
         f"utilization: a {use['a']['utilization_percent']}%, b {use['b']['utilization_percent']}%; "
         "want a 3..45 and b more")
    want(use["idle"]["beside_holder"] is False, "the idle vGPU, a cap, is shown beside a holder")
    want(use["idle"]["held_percent"] == 0 and use["idle"]["utilization_percent"] == 0 and
         use["idle"]["busy_ns"] == 0 and proc["idle"]["utilization_percent"] == [0.0],
         f"the idle vGPU: {use['idle']}, its process {proc['idle']['utilization_percent']}")

page = open(f"{tmp}/metrics.txt").read()
lines = page.splitlines()
host = socket.gethostname()


def labels(gpu):
    return (f'gpu="{gpu}",UUID="GPU-fa4e0000-0000-0000-0000-00000000000{gpu}",'
            f'pci_bus_id="00000000:0{gpu + 1}:00.0",modelName="Fake GPU {gpu}",Hostname="{host}"')


for family in ("vgpu_compute_busy_seconds_total", "vgpu_compute_held_percent", "vgpu_compute_utilization_percent",
               "vgpu_compute_holding", "vgpu_compute_beside_holder", "vgpu_compute_launch_seconds_total"):
    for n, gpu in (("a", 0), ("b", 0), ("idle", 1)):
        want(re.search(rf'^{family}{{{re.escape(labels(gpu))},vgpu="{n}",vgpu_device="0"}} [0-9.e+-]+$', page,
                       re.M), f"no {family} of {n} on GPU {gpu}")
want(f'vgpu_compute_mode{{{labels(1)},vgpu="idle",vgpu_device="0",vgpu_mode="cap"}} 1' in lines,
     "no vgpu_compute_mode of idle")
want(f'vgpu_process_compute_utilization_percent{{{labels(1)},vgpu="idle",vgpu_device="0",pid="{pids["idle"]}"}} 0'
     in lines, "no utilization of the idle vGPU's process")
for n in ("a", "b"):
    want(re.search(rf'^vgpu_process_compute_utilization_percent{{{re.escape(labels(0))},vgpu="{n}",'
                   rf'vgpu_device="0",pid="{pids[n]}"}} [0-9.]+$', page, re.M), f"no utilization of {n}'s process")
want(f'vgpu_compute_share_percent{{{labels(0)},vgpu="b",vgpu_device="0"}} 75' in lines,
     "vgpu_compute_share_percent lacks the DCGM labels")
want(not re.search(r'[{,]device=', page), "a metric has a device= label, which is DCGM's name for nvidia0")

rows = [l.rstrip() for l in open(f"{tmp}/table.txt") if re.match(r"^b +0 +0 +75% ", l)]
want(rows and re.match(r"^b +0 +0 +75% +share +(yes|beside|no) +[0-9.]+s +[0-9]+% +[0-9]+%$", rows[0]),
     f"the table's compute row of b: {rows}")
want(re.search(rf"^idle +{pids['idle']} .* [0-9]+MiB +0%$", open(f"{tmp}/table.txt").read(), re.M),
     "the table's process row of the idle vGPU lacks its utilization, 0%")

if errors:
    print(json.dumps(second, indent=1))
    print("\n".join(l for l in lines if "compute" in l))
    sys.exit("\n".join(errors))
