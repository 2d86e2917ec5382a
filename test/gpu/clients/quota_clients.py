"""Real frameworks inside a vGPU with a memory quota (run by test/gpu/memory/quota.sh).

`python3 quota_clients.py CLIENT QUOTA_BYTES` prints one line per check,
"ok ..." or "FAIL ...".  Each client must see the quota as its GPU's total
and get its own normal out-of-memory error past it, while the real GPU has
plenty free.
"""
import os
import subprocess
import sys

client, quota = sys.argv[1], int(sys.argv[2])
GiB = 1 << 30


def check(name, cond, detail=""):
    print(("ok " if cond else "FAIL ") + name + (": " + detail if detail else ""), flush=True)


def real_usage_mib():
    """This process's device memory as the driver reports it (nvidia-smi without vgpu)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                         env=env, capture_output=True, text=True).stdout
    rows = [line.split(",") for line in out.strip().splitlines() if line.strip()]
    mine = [int(r[1]) for r in rows if int(r[0]) == os.getpid()]
    return (mine[0] if mine else None), out.strip().replace("\n", "; ")


def fill_with(alloc, chunk, most=2 * quota):
    """Allocates chunks until the quota refuses (or most); returns what it holds."""
    held = []
    try:
        while len(held) * chunk < most:
            held.append(alloc(chunk))
    except Exception as e:  # noqa: BLE001 - the client's own OOM type is checked by the caller
        # The traceback holds this frame, and with it every chunk: drop it,
        # or "del held" frees nothing.
        e.__traceback__ = None
        return held, e
    return held, None


def torch_checks():
    import torch
    free, total = torch.cuda.mem_get_info()
    props = torch.cuda.get_device_properties(0).total_memory
    check(client + " total", total == quota and props == quota, "mem_get_info total %d, properties %d" % (total, props))
    check(client + " free", 0 < free < quota, "free %d" % free)
    try:
        torch.empty(quota + GiB, dtype=torch.uint8, device="cuda")
        check(client + " oom past quota", False, "allocated %d bytes" % (quota + GiB))
    except torch.OutOfMemoryError as e:
        check(client + " oom past quota", True, str(e).splitlines()[0][:120])
    held, err = fill_with(lambda n: torch.empty(n, dtype=torch.uint8, device="cuda"), 256 << 20)
    check(client + " fill ends in OutOfMemoryError", isinstance(err, torch.OutOfMemoryError), repr(err)[:100])
    used, table = real_usage_mib()
    check(client + " real usage under quota", used is not None and used * (1 << 20) <= quota,
          "held %d MiB in tensors, the driver counts %s MiB for this process (nvidia-smi: %s)"
          % (len(held) * 256, used, table))
    del held, err
    torch.cuda.empty_cache()
    free_after, _ = torch.cuda.mem_get_info()
    try:
        x = torch.empty(quota // 2, dtype=torch.uint8, device="cuda")
        check(client + " memory comes back", x is not None, "free %d after the tensors were freed" % free_after)
    except torch.OutOfMemoryError as e:
        check(client + " memory comes back", False, "free %d: %s" % (free_after, str(e).splitlines()[0][:100]))


def jax_checks():
    import jax
    import jax.numpy as jnp
    stats = jax.devices()[0].memory_stats() or {}
    limit = stats.get("bytes_limit", 0)
    check("jax bytes_limit within quota", 0 < limit <= quota, "bytes_limit %d" % limit)
    try:
        y = jnp.ones((quota + GiB) // 4, dtype=jnp.float32)
        y.block_until_ready()
        check("jax oom past quota", False, "allocated")
    except Exception as e:  # noqa: BLE001
        check("jax oom past quota", "RESOURCE_EXHAUSTED" in str(e), str(e).splitlines()[0][:120])
    used, table = real_usage_mib()
    check("jax real usage under quota", used is not None and used * (1 << 20) <= quota,
          "the driver counts %s MiB for this process (nvidia-smi: %s)" % (used, table))


def cupy_checks():
    import cupy
    free, total = cupy.cuda.runtime.memGetInfo()
    check("cupy total", total == quota, "memGetInfo total %d" % total)
    try:
        cupy.empty(quota + GiB, dtype=cupy.uint8)
        check("cupy oom past quota", False, "allocated")
    except cupy.cuda.memory.OutOfMemoryError as e:
        check("cupy oom past quota", True, str(e)[:120])
    held, err = fill_with(lambda n: cupy.empty(n, dtype=cupy.uint8), 256 << 20)
    used, table = real_usage_mib()
    check("cupy real usage under quota", used is not None and used * (1 << 20) <= quota,
          "held %d MiB, the driver counts %s MiB (nvidia-smi: %s)" % (len(held) * 256, used, table))


def cudapy_checks():
    from cuda.bindings import driver as cu
    cu.cuInit(0)
    err, dev = cu.cuDeviceGet(0)
    err, total = cu.cuDeviceTotalMem(dev)
    check("cuda-python cuDeviceTotalMem", total == quota, "total %d" % total)
    err, ctx = cu.cuDevicePrimaryCtxRetain(dev)
    cu.cuCtxSetCurrent(ctx)
    err, free, total = cu.cuMemGetInfo()
    check("cuda-python cuMemGetInfo", total == quota and 0 < free < quota, "free %d total %d" % (free, total))
    err, ptr = cu.cuMemAlloc(quota + GiB)
    check("cuda-python cuMemAlloc past quota", err == cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY, str(err))
    err, ptr = cu.cuMemAlloc(free // 2)
    check("cuda-python cuMemAlloc within quota", err == cu.CUresult.CUDA_SUCCESS, str(err))


def contexts_checks():
    # Each further context, and the memory a
    # context's stack limit reserves, counted as the driver counts them.
    # BAR0's device 0 memory_used is at 0x1040 (docs/reference/bar0.md).
    import struct
    from cuda.bindings import driver as cu

    def vgpu_used():
        with open(os.environ["VGPU_BAR0"], "rb") as f:
            f.seek(0x1040)
            return struct.unpack("<Q", f.read(8))[0]

    def agree(name):
        used, table = real_usage_mib()
        counted = vgpu_used()
        ok = used is not None and abs(counted - used * (1 << 20)) <= 64 << 20
        check(name, ok, "vgpu counts %d MiB, the driver %s MiB (nvidia-smi: %s)" % (counted >> 20, used, table))

    cu.cuInit(0)
    err, dev = cu.cuDeviceGet(0)
    err, prim = cu.cuDevicePrimaryCtxRetain(dev)
    cu.cuCtxSetCurrent(prim)
    agree("contexts: the primary context")
    made = []
    for n in (2, 3):
        err, ctx = cu.cuCtxCreate(None, 0, dev)
        made.append(ctx)
        check("contexts: context %d made" % n, err == cu.CUresult.CUDA_SUCCESS, str(err))
        agree("contexts: %d contexts counted as the driver counts them" % n)
    cu.cuCtxSetCurrent(prim)
    before = vgpu_used()
    err, = cu.cuCtxSetLimit(cu.CUlimit.CU_LIMIT_STACK_SIZE, 64 << 10)
    if quota >= 20 * GiB:
        check("stack limit: a 64 KiB stack set", err == cu.CUresult.CUDA_SUCCESS, str(err))
        check("stack limit: counted", vgpu_used() - before > 15 * GiB,
              "%.2f GiB more counted" % ((vgpu_used() - before) / GiB))
        agree("stack limit: counted as the driver counts it")
    else:
        check("stack limit: a 64 KiB stack refused past the quota", err == cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY,
              str(err))
        agree("stack limit: nothing reserved when refused")
    for ctx in made:
        cu.cuCtxDestroy(ctx)
    cu.cuCtxSetCurrent(prim)
    agree("contexts: after the created ones are destroyed")


def fill():
    # For the mediator's check: what the vGPU shows, then take 256 MiB chunks
    # until its quota refuses; report, and hold them until told to go.
    import torch
    free, total = torch.cuda.mem_get_info()
    held, err = fill_with(lambda n: torch.empty(n, dtype=torch.uint8, device="cuda"), 256 << 20, 2 * total)
    print("total %d held %d MiB %s" % (total, len(held) * 256, type(err).__name__), flush=True)
    sys.stdin.readline()


def hold():
    # For the shared-BAR0 check: take GiB chunks until refused, report, wait.
    import torch
    held, err = fill_with(lambda n: torch.empty(n, dtype=torch.uint8, device="cuda"), GiB // 2,
                          int(os.environ.get("HOLD_MAX", 2 * quota)))
    print("held %d MiB %s" % (len(held) * 512, type(err).__name__), flush=True)
    sys.stdin.readline()


CLIENTS = {
    "torch": torch_checks,
    "torch-expandable": torch_checks,
    "jax": jax_checks,
    "cupy": cupy_checks,
    "cudapy": cudapy_checks,
    "contexts": contexts_checks,
    "fill": fill,
    "hold": hold,
}

if client not in CLIENTS:
    sys.exit("unknown client " + client)
CLIENTS[client]()
