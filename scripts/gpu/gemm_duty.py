#!/usr/bin/env python3
"""GEMM rate against the share of time GEMMs take: the board's power limit at part duty.

A training step alternates GEMMs with memory-bound kernels and waits. steady_gemm.py measured the
GEMM rate with GEMMs back to back (all of the time); here GEMMs take a share `duty` of each period
(8 ms unless named) and a filler takes the rest: a large device-to-device copy (memory-bound work,
which draws power of its own) or torch.cuda._sleep (one spinning thread: an idle device). Each
point runs 3 s; the last 2 s are kept: the GEMMs' own time (CUDA events around each GEMM graph), so
their achieved rate, the realized duty, the SM clock and board power (NVML, every 5 ms).

    python3 scripts/gpu/gemm_duty.py --out "$OUT/gemm_duty.json"
"""

import argparse
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_time import capture  # noqa: E402
from steady_gemm import operands  # noqa: E402

SHAPE = (4096, 8192, 8192)  # m, n, k: under a millisecond a product
PEAK = {"bf16": 989.5e12, "fp8": 1978.9e12}


class Sampler:
    def __init__(self):
        import pynvml

        pynvml.nvmlInit()
        self.nv, self.h = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        self.rows, self.on, self.stop = [], False, threading.Event()
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while not self.stop.is_set():
            if self.on:
                self.rows.append((self.nv.nvmlDeviceGetClockInfo(self.h, self.nv.NVML_CLOCK_SM),
                                  self.nv.nvmlDeviceGetPowerUsage(self.h) / 1000))
            time.sleep(0.005)

    def take(self):
        rows, self.rows = self.rows, []
        if not rows:
            return {}
        return {"sm_mhz_median": statistics.median(r[0] for r in rows),
                "power_w_mean": statistics.mean(r[1] for r in rows)}


def once(torch, graph):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gemm_duty.json"))
    ap.add_argument("--dtypes", default="bf16,fp8")
    ap.add_argument("--seconds", type=float, default=3)
    args = ap.parse_args()
    import torch

    sampler = Sampler()
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "shape": SHAPE, "points": []}
    m, n, k = SHAPE
    src = torch.randn(1 << 29, device="cuda", dtype=torch.bfloat16)  # 1 GiB
    dst = torch.empty_like(src)
    copy = capture(torch, lambda: dst.copy_(src), 1)
    t_copy = min(once(torch, copy) for _ in range(5))
    res["copy_seconds"] = t_copy
    t_start = time.time()
    for dt in args.dtypes.split(","):
        fn = operands(torch, dt, m, n, k)
        one = capture(torch, fn, 1)
        for _ in range(20):
            one.replay()
        t_gemm = min(once(torch, one) for _ in range(5))
        flops = 2.0 * m * n * k
        graphs = {}

        def gemms(count):
            if count not in graphs:
                graphs[count] = capture(torch, fn, count)
            return graphs[count]

        plan = [("none", 1.0, 8)]
        for filler in ("copy", "sleep"):
            for duty in (0.25, 0.5, 0.75):
                plan.append((filler, duty, 8))
        plan += [("copy", 0.5, 2), ("copy", 0.5, 32)]
        for filler, duty, period_ms in plan:
            n_g = max(1, round(duty * period_ms / 1000 / t_gemm))
            rest = (1 - duty) * period_ms / 1000
            if filler == "copy":
                fill = capture(torch, lambda: dst.copy_(src), 1)
                n_f = max(1, round(rest / t_copy))

                def fill_once():
                    for _ in range(n_f):
                        fill.replay()
            elif filler == "sleep":
                cycles = int(rest * 1.98e9)

                def fill_once():
                    torch.cuda._sleep(cycles)
            else:
                def fill_once():
                    pass
            g = gemms(n_g)
            t0 = time.time()
            kept_gemm = kept_total = 0.0
            kept_products = 0
            pending = []
            while time.time() - t0 < args.seconds:
                keep = time.time() - t0 > 1.0
                if keep and not sampler.on:
                    sampler.on = True
                a, b, c = (torch.cuda.Event(enable_timing=True) for _ in range(3))
                a.record()
                g.replay()
                b.record()
                fill_once()
                c.record()
                pending.append((a, b, c, keep))
                if len(pending) >= 8:
                    torch.cuda.synchronize()
                    for a, b, c, kp in pending:
                        if kp:
                            kept_gemm += a.elapsed_time(b) / 1000
                            kept_total += a.elapsed_time(c) / 1000
                            kept_products += n_g
                    pending = []
            torch.cuda.synchronize()
            sampler.on = False
            point = {"dtype": dt, "filler": filler, "target_duty": duty, "period_ms": period_ms,
                     "gemms_per_period": n_g, "duty": kept_gemm / kept_total if kept_total else None,
                     "efficiency": kept_products * flops / kept_gemm / PEAK[dt] if kept_gemm else None,
                     "burst_efficiency": flops / t_gemm / PEAK[dt]}
            point.update(sampler.take())
            res["points"].append(point)
            print(json.dumps(point), flush=True)
            with open(args.out, "w") as f:
                json.dump(res, f, indent=1)
            time.sleep(1)  # let the card recover between points, as between a step's phases
        del graphs, one, fn
    sampler.stop.set()
    print("done in %.1f s" % (time.time() - t_start), flush=True)


if __name__ == "__main__":
    main()
