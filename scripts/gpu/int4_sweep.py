#!/usr/bin/env python3
"""Weight-only int4 decode GEMMs on one GPU: what dequantizing in the kernel costs against bf16.

PyTorch's own W4A16 kernel (tinygemm: torch._weight_int4pack_mm, groups of 128 with bf16 scales and
zeros, what torchao's int4 weight-only runs) at the decode shapes of decode_sweep.py, M = 1..64
tokens, weights of 100 MB and more in bf16 terms; each product 20 times in one CUDA graph
(graph_time.py). Beside each, the bf16 product of the same shape. tally's weight-only
dequantization cost comes from the ratio (estimate/kernel_costs.h).

    python3 scripts/gpu/int4_sweep.py --out "$OUT/int4_sweep.json"
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_time import graph_seconds  # noqa: E402

M = [1, 2, 4, 8, 16, 32, 64]
WEIGHTS = [(4096, 14336), (6144, 4096), (8192, 8192), (14336, 8192), (28672, 4096), (8192, 28672),
           (57344, 8192), (128256, 4096)]
GROUP = 128


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "int4_sweep.json"))
    args = ap.parse_args()
    import torch
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "group": GROUP, "m": M,
           "weights": WEIGHTS, "int4": {}, "bf16": {}}
    for n, k in WEIGHTS:
        w = torch.randint(0, 256, (n, k // 2), device="cuda", dtype=torch.uint8)
        try:
            packed = torch._convert_weight_to_int4pack(w, 8)
        except Exception as e:  # noqa: BLE001
            res["error"] = "convert: %r" % (e,)
            break
        sz = torch.randn(k // GROUP, n, 2, device="cuda", dtype=torch.bfloat16)
        wb = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
        for m in M:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            key = "%d,%d,%d" % (m, n, k)
            try:
                res["int4"][key] = graph_seconds(torch, lambda: torch._weight_int4pack_mm(x, packed, GROUP, sz),
                                                 calls=20)
            except Exception as e:  # noqa: BLE001
                res["int4"][key] = "error: %r" % (e,)
            res["bf16"][key] = graph_seconds(torch, lambda: x @ wb, calls=20)
        del w, packed, sz, wb
        print(n, k, flush=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
