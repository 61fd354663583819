#!/usr/bin/env python3
"""Sweep the two kernels a GEMM sweep leaves out, for tally's attention and MoE costs.

  attention  PyTorch SDPA, causal, bf16 (and fp32, with TF32 matmuls off and on), by backend (flash, cuDNN, memory-efficient), head dim,
             sequence and batch x heads: forward, and forward + backward, each timed in a CUDA
             graph (graph_time.py). FLOPs counted as tally counts them: 4·b·h·s²·d / 2 forward
             (causal), 2.5x that backward.
  attention-kernels  the same SDPA (default backend) forward + backward as the sum of its kernels'
             GPU time under torch.profiler, free of the launch gaps event timing counts at short
             sequences.
  grouped    torch._grouped_mm, bf16: G experts' (m x K)·(K x N) products in one call, beside the
             same G products as one dense (G·m x K)·(K x N) GEMM and as G separate matmuls, for the
             expert shapes of Qwen3-30B-A3B, gpt-oss and DeepSeek-V3.

Each part rewrites the JSON file when it ends, so a timeout keeps what finished.

    python3 scripts/gpu/kernel_sweep.py --out "$OUT/kernel_sweep.json"
"""

import argparse
import contextlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_time import graph_seconds  # noqa: E402

HEAD_DIMS = [64, 128]
SEQS = [1024, 2048, 4096, 8192, 16384]
BATCH_HEADS = [(1, 8), (1, 32), (4, 32)]
# (name, K hidden, N of the gate+up product, expert width): the down product is (m x width)·(width x K).
EXPERTS = [("qwen3-30b-a3b", 2048, 1536, 768), ("gpt-oss", 2880, 5760, 2880), ("deepseek-v3", 7168, 4096, 2048)]
GROUPS = [4, 16, 32]
ROWS = [64, 256, 1024, 4096]


def attention_shapes(torch, dtype_name):
    """Each swept shape: its fields, q, k and v (requiring grad), an output gradient, forward FLOPs."""
    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float32
    for d in HEAD_DIMS:
        for s in SEQS:
            for b, h in BATCH_HEADS:
                if b * h * s > 4 * 32 * 8192 or (dtype_name != "bf16" and b * h * s > 32 * 4096):
                    continue
                q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype, requires_grad=True)
                           for _ in range(3))
                g = torch.randn(b, h, s, d, device="cuda", dtype=dtype)
                yield {"dtype": dtype_name, "b": b, "heads": h, "s": s, "d": d}, q, k, v, g, 4.0 * b * h * s * s * d / 2


def attention(torch, res, out, dtype_name="bf16"):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    f = torch.nn.functional.scaled_dot_product_attention
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION, "default": None}
    torch.backends.cuda.matmul.allow_tf32 = dtype_name == "fp32-tf32"
    rows = []
    for shape, q, k, v, g, fwd_flops in attention_shapes(torch, dtype_name):
        for name, be in backends.items():
            row = dict(shape, backend=name)
            try:
                with sdpa_kernel([be]) if be is not None else contextlib.nullcontext():
                    def fwd():
                        with torch.no_grad():
                            return f(q, k, v, is_causal=True)

                    def both():
                        o = f(q, k, v, is_causal=True)
                        o.backward(g)
                    row["forward_s"] = graph_seconds(torch, fwd, calls=5)
                    row["forward_tflops"] = fwd_flops / row["forward_s"] / 1e12
                    for _ in range(3):
                        both()
                    torch.cuda.synchronize()
                    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    st.record()
                    for _ in range(10):
                        both()
                    en.record()
                    torch.cuda.synchronize()
                    row["forward_backward_s"] = st.elapsed_time(en) / 1000 / 10
                    row["forward_backward_tflops"] = 3.5 * fwd_flops / row["forward_backward_s"] / 1e12
                    q.grad = k.grad = v.grad = None
            except Exception as e:  # noqa: BLE001
                row["error"] = repr(e)[:200]
            rows.append(row)
        del q, k, v, g
    torch.backends.cuda.matmul.allow_tf32 = False
    res.setdefault("attention", []).extend(rows)
    with open(out, "w") as fh:
        json.dump(res, fh, indent=1)


def attention_kernels(torch, res, out, dtype_name="bf16"):
    """Forward + backward of the default SDPA backend as the sum of its kernels' GPU time
    (torch.profiler, median of 3 steps): no launch gap counted, which event timing of eager
    backward calls includes at short sequences."""
    from torch.profiler import ProfilerActivity, profile
    f = torch.nn.functional.scaled_dot_product_attention

    def kernel_seconds(prof):
        return sum(e.self_device_time_total for e in prof.key_averages()
                   if "CUDA" in str(getattr(e, "device_type", ""))) / 1e6
    rows = []
    for shape, q, k, v, g, fwd_flops in attention_shapes(torch, dtype_name):
        row = dict(shape, backend="default")
        try:
            for _ in range(2):
                f(q, k, v, is_causal=True).backward(g)
            torch.cuda.synchronize()
            fwd_times, both_times = [], []
            for _ in range(3):
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    with torch.no_grad():
                        f(q, k, v, is_causal=True)
                    torch.cuda.synchronize()
                fwd_times.append(kernel_seconds(prof))
                q.grad = k.grad = v.grad = None  # no accumulation kernels
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    f(q, k, v, is_causal=True).backward(g)
                    torch.cuda.synchronize()
                both_times.append(kernel_seconds(prof))
            fwd_s, both_s = sorted(fwd_times)[1], sorted(both_times)[1]
            row.update(forward_kernel_s=fwd_s, forward_backward_kernel_s=both_s,
                       forward_kernel_tflops=fwd_flops / fwd_s / 1e12,
                       forward_backward_kernel_tflops=3.5 * fwd_flops / both_s / 1e12)
            q.grad = k.grad = v.grad = None
        except Exception as e:  # noqa: BLE001
            row["error"] = repr(e)[:200]
        rows.append(row)
        del q, k, v, g
    res.setdefault("attention_kernels", []).extend(rows)
    with open(out, "w") as fh:
        json.dump(res, fh, indent=1)


def grouped(torch, res, out):
    rows = []
    for model, hidden, gate_up, width in EXPERTS:
        for n, k, what in ((gate_up, hidden, "gate_up"), (hidden, width, "down")):
            for groups in GROUPS:
                for m in ROWS:
                    row = {"model": model, "product": what, "groups": groups, "m": m, "n": n, "k": k}
                    flops = 2.0 * groups * m * n * k
                    try:
                        a = torch.randn(groups * m, k, device="cuda", dtype=torch.bfloat16)
                        w = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16).transpose(-2, -1)
                        offs = torch.arange(m, groups * m + 1, m, device="cuda", dtype=torch.int32)
                        dense_w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
                        calls = 10 if flops < 2e12 else 3
                        try:
                            row["grouped_s"] = graph_seconds(torch, lambda: torch._grouped_mm(a, w, offs=offs),
                                                             calls=calls)
                            row["grouped_tflops"] = flops / row["grouped_s"] / 1e12
                        except Exception as e:  # noqa: BLE001
                            row["grouped_error"] = repr(e)[:200]
                        row["dense_s"] = graph_seconds(torch, lambda: a @ dense_w, calls=calls)
                        row["dense_tflops"] = flops / row["dense_s"] / 1e12
                        parts = [a[i * m:(i + 1) * m] for i in range(groups)]

                        def loop():
                            for i in range(groups):
                                parts[i] @ w[i]
                        row["loop_s"] = graph_seconds(torch, loop, calls=max(1, calls // 2))
                        row["loop_tflops"] = flops / row["loop_s"] / 1e12
                        del a, w, dense_w, parts
                    except Exception as e:  # noqa: BLE001
                        row["error"] = repr(e)[:200]
                    rows.append(row)
    res["grouped"] = rows
    with open(out, "w") as fh:
        json.dump(res, fh, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "kernel_sweep.json"))
    ap.add_argument("--parts", default="attention,grouped")
    ap.add_argument("--attention-dtypes", default="bf16")
    args = ap.parse_args()
    import torch
    props = torch.cuda.get_device_properties(0)
    res = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "gpu": torch.cuda.get_device_name(0),
           "sm_count": props.multi_processor_count}
    t0 = time.time()
    for part in args.parts.split(","):
        if part == "attention-kernels":
            for dt in args.attention_dtypes.split(","):
                attention_kernels(torch, res, args.out, dt)
                print(part, dt, "done at %.1f s" % (time.time() - t0), flush=True)
        elif part == "attention":
            for dt in args.attention_dtypes.split(","):
                attention(torch, res, args.out, dt)
                print(part, dt, "done at %.1f s" % (time.time() - t0), flush=True)
        else:
            grouped(torch, res, args.out)
            print(part, "done at %.1f s" % (time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
