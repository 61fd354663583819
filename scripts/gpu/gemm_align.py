#!/usr/bin/env python3
"""Time a linear layer's three GEMMs when a dimension is not a multiple of 8 (GPT-2's vocabulary of
50,257) against the aligned 50,304, on one GPU: the kernels cuBLAS falls back to for unaligned
16-bit operands. Each product 10 times in a CUDA graph, replayed 5 times (median).

    python3 scripts/gpu/gemm_align.py --out "$OUT/gemm_align.json"
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_time import graph_seconds  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gemm_align.json"))
    args = ap.parse_args()
    import torch
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "rows": []}

    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)):
        for m in (1024, 8192):
            for k in (768, 2048, 4096):
                for n in (50257, 50304, 32001, 32000):
                    x = torch.randn(m, k, device="cuda", dtype=dtype)
                    w = torch.randn(n, k, device="cuda", dtype=dtype)
                    dy = torch.randn(m, n, device="cuda", dtype=dtype)
                    row = {"dtype": name, "m": m, "n": n, "k": k}
                    for part, fn in (("forward", lambda: x @ w.t()), ("grad_input", lambda: dy @ w),
                                     ("grad_weight", lambda: dy.t() @ x)):
                        t = graph_seconds(torch, fn)
                        row[part + "_seconds"] = t
                        row[part + "_tflops"] = 2 * m * n * k / t / 1e12
                    res["rows"].append(row)
                    print(json.dumps(row), flush=True)
                    del x, w, dy
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
