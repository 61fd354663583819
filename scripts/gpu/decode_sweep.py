#!/usr/bin/env python3
"""Decode's device-level costs on one GPU: what a small-batch generated token is made of.

Three sweeps, each kernel run back to back inside one CUDA graph (graph_time.py), so the figure is
the GPU's own time with no host launch gap, as in a serving engine that replays CUDA graphs:
- `gemm`: decode GEMMs (M tokens) x (K x N weights), M = 1..256, over the weight shapes of 8B and
  70B decoders at tp 1..8, bf16 (torch.matmul) and fp8 (torch._scaled_mm, M padded to 16);
- `stream`: one elementwise add over 1 KiB .. 1 GiB (read 2, write 1): the per-kernel floor and the
  asymptotic bandwidth;
- `attention`: one decode query per sequence (SDPA) over a KV cache of 128 .. 32768 positions.
Then `step`: a whole Llama-3.1-8B-shaped decode step (random bf16 weights, written with plain torch
ops as fused engines run them: one GEMM each for qkv, o, gate+up and down, RMSNorm, RoPE, SDPA over
the cache, the head) at batch 1..64 and context 512/4096, for an end-to-end check of the model
these sweeps feed (tally's constants come from the sweeps, never from these steps).

    python3 scripts/gpu/decode_sweep.py --out "$OUT/decode_sweep.json"
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_time import graph_seconds  # noqa: E402

M = [1, 2, 4, 8, 16, 32, 64, 128, 256]
# (N, K) of y = x W^T: Llama-3.1-8B at tp 1 (qkv, o, gate+up, down, head) and Llama-3-70B at tp 1..8.
WEIGHTS = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (128256, 4096),
           (1024, 1024), (2048, 2048)]
for tp in (1, 2, 4, 8):
    WEIGHTS += [(10240 // tp, 8192), (8192, 8192 // tp), (57344 // tp, 8192), (8192, 28672 // tp)]
WEIGHTS = sorted(set(WEIGHTS))
STREAM = [2 ** p for p in range(10, 31, 2)]  # bytes of each operand
KV = [128, 512, 2048, 8192, 32768]
KV_BATCH = [1, 8, 32]


def gemm_sweep(torch, res, dtypes):
    for dt in dtypes:
        table = {}
        for n, k in WEIGHTS:
            for m in M:
                key = "%d,%d,%d" % (m, n, k)
                try:
                    if dt == "fp8":
                        mp = max(16, (m + 15) // 16 * 16)  # _scaled_mm wants multiples of 16
                        a = torch.randn(mp, k, device="cuda").to(torch.float8_e4m3fn)
                        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
                        one = torch.ones((), device="cuda")

                        def fn():
                            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                    else:
                        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()

                        def fn():
                            return a @ b
                    table[key] = graph_seconds(torch, fn, calls=20)
                    del a, b
                except Exception as e:  # noqa: BLE001
                    table[key] = "error: %r" % (e,)
        res["gemm"][dt] = table


def stream_sweep(torch, res):
    for nbytes in STREAM:
        n = nbytes // 2
        a = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty_like(a)
        res["stream"][str(nbytes)] = graph_seconds(torch, lambda: torch.add(a, b, out=c),
                                                   calls=50 if nbytes < 2 ** 26 else 5)
        del a, b, c


def attention_sweep(torch, res):
    import torch.nn.functional as F
    heads, kv_heads, d = 32, 8, 128  # Llama-3.1-8B at tp 1
    for batch in KV_BATCH:
        for s in KV:
            q = torch.randn(batch, heads, 1, d, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(batch, kv_heads, s, d, device="cuda", dtype=torch.bfloat16)
            v = torch.randn_like(k)
            try:
                res["attention"]["%d,%d" % (batch, s)] = graph_seconds(
                    torch, lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), calls=20)
            except Exception as e:  # noqa: BLE001
                res["attention"]["%d,%d" % (batch, s)] = "error: %r" % (e,)
            del q, k, v


def decode_step(torch, res):
    import torch.nn.functional as F
    hidden, heads, kv_heads, d, inter, layers, vocab = 4096, 32, 8, 128, 14336, 32, 128256
    dt = torch.bfloat16
    w = [dict(qkv=torch.randn(hidden + 2 * kv_heads * d, hidden, device="cuda", dtype=dt) * 0.02,
              o=torch.randn(hidden, hidden, device="cuda", dtype=dt) * 0.02,
              gu=torch.randn(2 * inter, hidden, device="cuda", dtype=dt) * 0.02,
              down=torch.randn(hidden, inter, device="cuda", dtype=dt) * 0.02,
              n1=torch.ones(hidden, device="cuda", dtype=dt), n2=torch.ones(hidden, device="cuda", dtype=dt))
         for _ in range(layers)]
    head = torch.randn(vocab, hidden, device="cuda", dtype=dt) * 0.02
    nf = torch.ones(hidden, device="cuda", dtype=dt)

    def rms(x, g):
        return F.rms_norm(x, (hidden,), g, 1e-5)

    for ctx in (512, 4096):
        for batch in (1, 8, 32, 64):
            cache = [(torch.randn(batch, kv_heads, ctx, d, device="cuda", dtype=dt),
                      torch.randn(batch, kv_heads, ctx, d, device="cuda", dtype=dt)) for _ in range(layers)]
            x0 = torch.randn(batch, 1, hidden, device="cuda", dtype=dt)
            cos = torch.randn(1, 1, 1, d, device="cuda", dtype=dt)
            sin = torch.randn(1, 1, 1, d, device="cuda", dtype=dt)
            pos = ctx - 1

            def rope(t):
                t1, t2 = t[..., : d // 2], t[..., d // 2:]
                return t * cos + torch.cat((-t2, t1), dim=-1) * sin

            def step():
                x = x0
                for lw, (kc, vc) in zip(w, cache):
                    h = rms(x, lw["n1"])
                    qkv = F.linear(h, lw["qkv"])
                    q, k, v = qkv.split([hidden, kv_heads * d, kv_heads * d], dim=-1)
                    q = rope(q.view(batch, 1, heads, d).transpose(1, 2))
                    k = rope(k.view(batch, 1, kv_heads, d).transpose(1, 2))
                    kc[:, :, pos: pos + 1].copy_(k)
                    vc[:, :, pos: pos + 1].copy_(v.view(batch, 1, kv_heads, d).transpose(1, 2))
                    a = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True)
                    x = x + F.linear(a.transpose(1, 2).reshape(batch, 1, hidden), lw["o"])
                    h = rms(x, lw["n2"])
                    g, u = F.linear(h, lw["gu"]).chunk(2, dim=-1)
                    x = x + F.linear(F.silu(g) * u, lw["down"])
                return F.linear(rms(x, nf), head)

            try:
                res["step"]["%d,%d" % (batch, ctx)] = graph_seconds(torch, step, calls=1, replays=10)
            except Exception as e:  # noqa: BLE001
                res["step"]["%d,%d" % (batch, ctx)] = "error: %r" % (e,)
            if batch == 1 and ctx == 512:
                # The step's kernels, counted by the profiler over one eager run.
                from torch.profiler import ProfilerActivity, profile
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    step()
                    torch.cuda.synchronize()
                kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
                res["step_kernels"] = {"count": len(kernels), "per_layer": len(kernels) / layers}
            del cache


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "decode_sweep.json"))
    ap.add_argument("--parts", default="stream,gemm,attention,step")
    args = ap.parse_args()
    import torch
    props = torch.cuda.get_device_properties(0)
    res = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
           "sm_count": props.multi_processor_count, "m": M, "weights": WEIGHTS, "gemm": {}, "stream": {},
           "attention": {}, "step": {}, "step_kernels": {}}
    t0 = time.time()
    for part in args.parts.split(","):
        if part == "gemm":
            gemm_sweep(torch, res, ["bf16", "fp8"])
        elif part == "stream":
            stream_sweep(torch, res)
        elif part == "attention":
            attention_sweep(torch, res)
        elif part == "step":
            decode_step(torch, res)
        print(part, "done at %.1f s" % (time.time() - t0), flush=True)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
