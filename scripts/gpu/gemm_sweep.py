#!/usr/bin/env python3
"""Sweep GEMM shapes on one GPU for the kernel's own time: tally's GEMM efficiency by shape.

Each (M, N, K) product runs 10 times inside one CUDA graph, replayed 5 times (median), so the
figure is the kernels' time with no launch gap between them, as in a training step whose queue
the host keeps full (timing single calls with events adds some 20 µs of launch to each, which
inflates small shapes: shared/reference/h100-measured.md). A (M x K) · (K x N) product; bf16 and
fp16 by torch.matmul, tf32 and fp32 likewise (allow_tf32 on and off), fp8 by torch._scaled_mm
(e4m3, tensorwise scales, bf16 out).

    python3 scripts/gpu/gemm_sweep.py --out "$OUT/gemm_sweep.json"
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_time import graph_seconds  # noqa: E402

M = [64, 256, 1024, 4096, 16384]
N = [768, 2048, 4096, 8192, 16384, 50304]
K = [768, 2048, 4096, 8192]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gemm_sweep.json"))
    ap.add_argument("--dtypes", default="bf16,fp8,tf32,fp32")
    args = ap.parse_args()
    import torch
    sync = torch.cuda.synchronize
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
           "sm_count": torch.cuda.get_device_properties(0).multi_processor_count, "m": M, "n": N, "k": K,
           "seconds": {}}
    t_start = time.time()
    for dt in args.dtypes.split(","):
        torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
        table = {}
        for n in N:
            for k in K:
                for m in M:
                    try:
                        if dt == "fp8":
                            a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
                            b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
                            one = torch.ones((), device="cuda")

                            def fn():
                                return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                        else:
                            dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dt, torch.float32)
                            a = torch.randn(m, k, device="cuda", dtype=dtype)
                            b = torch.randn(k, n, device="cuda", dtype=dtype)

                            def fn():
                                return a @ b
                        reps = 10 if 2 * m * n * k < 2e12 else 3
                        table["%d,%d,%d" % (m, n, k)] = graph_seconds(torch, fn, calls=reps)
                        del a, b
                    except Exception as e:  # noqa: BLE001
                        table["%d,%d,%d" % (m, n, k)] = "error: %r" % (e,)
        res["seconds"][dt] = table
        print(dt, "done at %.1f s" % (time.time() - t_start), flush=True)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    main()
