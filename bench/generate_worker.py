"""A Hugging Face transformers generate, as a serving program runs it (bench/remote.py's `generate`).

    python3 bench/generate_worker.py [--tokens 128] [--layers 24] [--prompt 16] [--no-cudnn-attention]

A LLaMA-shaped model (hidden 2048, 24 layers of 16 heads, MLP 5504, vocabulary
32000: 1.3 B parameters) with random weights made on the GPU from seed 0, in
bf16.  Measures, each once:

- `unload_gbps`: its weights copied to pageable host memory (`.cpu()` of each
  tensor: a checkpoint saved);
- `load_gbps`: those pageable tensors copied back to the GPU (`.cuda()`, as a
  server loads a checkpoint);
- `tokens_per_s`: greedy generation of --tokens new tokens after a prompt of
  --prompt tokens (a short generation first, not timed, warms it up);
- `ids`: a hash of the generated ids (equal in every run of one GPU);
- in a remote guest (vgpu's record of its calls, read through /proc/self/fd):
  `crossed_per_token` and `sent_per_token`, the calls that waited for the
  executor and those sent without waiting, per generated token, and
  `launches_per_token`.

--no-cudnn-attention turns PyTorch's cuDNN attention off (its other kernels
then serve scaled_dot_product_attention).  Prints one JSON line;
`{"skipped": ...}` where transformers is not installed.
"""
import argparse
import hashlib
import json
import os
import struct
import time


def calls_record():
    """This process's vgpu record of its CUDA calls (common/contract/window/calls_page.h):
    {name: (crossed, sent)}, or None outside a remote guest."""
    fds = "/proc/self/fd"
    for fd in os.listdir(fds):
        try:
            if os.readlink(os.path.join(fds, fd)) != "/memfd:vgpu-calls-cuda (deleted)":
                continue
            with open(os.path.join(fds, fd), "rb") as f:
                data = f.read()
        except OSError:
            continue
        magic, version, _library, slots = struct.unpack_from("<QIII", data, 0)
        if magic != 0x534C4C4143555047 or version != 1:
            return None
        out = {}
        for i in range(slots):
            name, crossed, sent, _wait, _bytes, _full = struct.unpack_from("<56sQQQQQ", data, 144 + 96 * i)
            if crossed or sent:
                out[name.split(b"\0")[0].decode()] = (crossed, sent)
        return out
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--no-cudnn-attention", action="store_true")
    a = ap.parse_args()
    try:
        import transformers
    except ImportError:
        print(json.dumps({"skipped": "transformers is not installed"}), flush=True)
        return
    import torch

    transformers.logging.set_verbosity_error()
    if a.no_cudnn_attention:
        torch.backends.cuda.enable_cudnn_sdp(False)
    cfg = transformers.LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5504,
                                   num_hidden_layers=a.layers, num_attention_heads=16, num_key_value_heads=16,
                                   max_position_embeddings=2048)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = transformers.LlamaForCausalLM(cfg)
    model.eval()
    torch.cuda.synchronize()
    out = {}
    params = dict(model.named_parameters())
    size = sum(p.numel() * p.element_size() for p in params.values())

    t = time.perf_counter()
    host = {k: p.detach().cpu() for k, p in params.items()}
    out["unload_gbps"] = size / (time.perf_counter() - t) / 1e9
    torch.cuda.synchronize()
    t = time.perf_counter()
    for k, p in params.items():
        p.data = host[k].cuda()
    torch.cuda.synchronize()
    out["load_gbps"] = size / (time.perf_counter() - t) / 1e9
    del host

    prompt = (torch.arange(a.prompt, device="cuda") * 7919 % cfg.vocab_size).unsqueeze(0)
    with torch.no_grad():
        model.generate(prompt, max_new_tokens=8, min_new_tokens=8, do_sample=False)
        torch.cuda.synchronize()
        before = calls_record()
        t = time.perf_counter()
        ids = model.generate(prompt, max_new_tokens=a.tokens, min_new_tokens=a.tokens, do_sample=False)
        torch.cuda.synchronize()
        took = time.perf_counter() - t
        after = calls_record()
    new = ids.shape[1] - a.prompt
    out["tokens_per_s"] = new / took
    out["ids"] = hashlib.sha256(ids.cpu().numpy().tobytes()).hexdigest()[:16]
    if before is not None and after is not None:
        diff = {k: (c - before.get(k, (0, 0))[0], s - before.get(k, (0, 0))[1]) for k, (c, s) in after.items()}
        out["crossed_per_token"] = sum(c for c, _ in diff.values()) / new
        out["sent_per_token"] = sum(s for _, s in diff.values()) / new
        out["launches_per_token"] = sum(c + s for k, (c, s) in diff.items() if k.startswith("cuLaunch")) / new
        top = sorted(((c, k) for k, (c, _) in diff.items() if c), reverse=True)[:8]
        out["crossed_most"] = {k: round(c / new, 1) for c, k in top}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
