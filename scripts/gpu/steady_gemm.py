#!/usr/bin/env python3
"""GEMM rates with the GPU at its sustained, power-limited clock, as in a training step.

gemm_sweep.py times each shape as a short burst (10 products in one CUDA graph), so small and
medium shapes run at the boost clock, while a training step keeps the tensor cores busy for seconds
and the board holds its power limit by lowering the clock. This script measures that state:

  series    one large product (8192^3) back to back for `--series-seconds`, sampled every
            second: products done, SM clock, board power, the clock-event reasons (NVML).
  steady    every shape of gemm_sweep.py's grid, each timed right after ~100 ms of the large
            product of the same dtype, queued behind it with no idle gap (a heater graph, then
            the shape's graph between CUDA events; the median of 3), so the shape runs at the
            clock the heater left. The SM clock after each shape is recorded.
  burst     the same grid timed as gemm_sweep.py does, in the same call, for the ratio on one card.
  grouped   MoE expert GEMMs: torch._grouped_mm over G experts of r rows each, steady, beside one
            dense product of the per-expert shape and one of all rows.

The JSON is rewritten after every phase, so a timeout keeps what finished.

    python3 scripts/gpu/steady_gemm.py --out "$OUT/steady_gemm.json"
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_sweep import K, M, N  # noqa: E402  (the same grid as the burst sweep)
from graph_time import capture, graph_seconds  # noqa: E402

HEAT = 8192  # the heater's m = n = k


def nvml_sampler():
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception as e:  # noqa: BLE001
        print("no NVML: %r" % (e,), flush=True)
        return lambda: {}

    def sample():
        out = {}
        for key, fn in (
            ("sm_mhz", lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)),
            ("mem_mhz", lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)),
            ("power_w", lambda: pynvml.nvmlDeviceGetPowerUsage(h) / 1000),
            ("temp_c", lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)),
            ("reasons", lambda: int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(h))),
        ):
            try:
                out[key] = fn()
            except Exception:  # noqa: BLE001
                pass
        return out

    return sample


def operands(torch, dt, m, n, k):
    """fn() computing one (m x k)·(k x n) product in dtype `dt`, as gemm_sweep.py builds it."""
    if dt == "fp8":
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
        one = torch.ones((), device="cuda")
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dt, torch.float32)
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    return lambda: a @ b


class Heater:
    """About `ms` of the large product of one dtype, as one graph replay."""

    def __init__(self, torch, dt, ms=100):
        self.torch = torch
        # The graphs read the operands where they were at capture: hold them (and the graphs) for
        # the heater's life, or the allocator may hand their memory back.
        self.fn = fn = operands(torch, dt, HEAT, HEAT, HEAT)
        one = capture(torch, fn, 1)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(3):
            start.record()
            one.replay()
            end.record()
        torch.cuda.synchronize()
        per = start.elapsed_time(end)
        self.calls = max(1, round(ms / per))
        self.graph = capture(torch, fn, self.calls)
        self.flops = 2.0 * HEAT**3 * self.calls
        self.one = one
        torch.cuda.synchronize()

    def run(self, seconds):
        t0 = time.time()
        while time.time() - t0 < seconds:
            self.graph.replay()
            self.torch.cuda.synchronize()


def steady_seconds(torch, heater, fn, calls, reps=3):
    """Seconds per call of fn, each timing queued right behind one heater replay (no idle gap)."""
    g = capture(torch, fn, calls)
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        heater.graph.replay()
        start.record()
        g.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000 / calls)
    del g
    return statistics.median(times)


def fatal(e):
    """A lost CUDA context fails every later call: stop the phase rather than record it 120 times."""
    if type(e).__name__ == "AcceleratorError":
        raise e


def calls_for(m, n, k):
    return 10 if 2 * m * n * k < 2e12 else 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "steady_gemm.json"))
    ap.add_argument("--series-seconds", type=float, default=20)
    ap.add_argument("--phases", default="burst:bf16,burst:fp8,steady:bf16,steady:fp8,series:bf16,series:fp8,"
                    "grouped,steady:tf32,steady:fp32",
                    help="in order; the burst grid first, as gemm_sweep.py ran it, from a cool card")
    args = ap.parse_args()
    import torch

    sample = nvml_sampler()
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
           "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
           "cuda": torch.version.cuda, "m": M, "n": N, "k": K, "heater": HEAT}
    try:
        res["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,power.limit,power.default_limit,power.max_limit,"
             "clocks.max.sm,clocks.max.mem,temperature.gpu", "--format=csv"],
            capture_output=True, text=True, timeout=20).stdout
    except Exception as e:  # noqa: BLE001
        res["nvidia_smi"] = "error: %r" % (e,)
    print(res["nvidia_smi"], flush=True)
    t_start = time.time()

    def save(tag):
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
        print("%s done at %.1f s" % (tag, time.time() - t_start), flush=True)

    def setup(dt):
        torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"

    for phase in args.phases.split(","):
        phase, _, dt = phase.partition(":")
        try:
            if phase == "steady":
                setup(dt)
                heater = Heater(torch, dt)
                heater.run(3)
                table, clocks = {}, {}
                for n in N:
                    for k in K:
                        for m in M:
                            key = "%d,%d,%d" % (m, n, k)
                            try:
                                fn = operands(torch, dt, m, n, k)
                                table[key] = steady_seconds(torch, heater, fn, calls_for(m, n, k))
                                clocks[key] = sample().get("sm_mhz")
                                del fn
                            except Exception as e:  # noqa: BLE001
                                fatal(e)
                                table[key] = "error: %r" % (e,)
                res.setdefault("steady", {})[dt] = table
                res.setdefault("steady_clock", {})[dt] = clocks
                del heater
                save("steady " + dt)
            elif phase == "series":
                setup(dt)
                heater = Heater(torch, dt, ms=20)
                time.sleep(3)  # idle first: the series starts from a cool, boosted card
                rows, t0 = [], time.time()
                while time.time() - t0 < args.series_seconds:
                    w0, done = time.time(), 0
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    while time.time() - w0 < 0.5:
                        heater.graph.replay()
                        done += 1
                        if done % 4 == 0:
                            torch.cuda.synchronize()
                    end.record()
                    torch.cuda.synchronize()
                    row = {"t": round(time.time() - t0, 3),
                           "flops_per_s": heater.flops * done / (start.elapsed_time(end) / 1000)}
                    row.update(sample())
                    rows.append(row)
                res.setdefault("series", {})[dt] = rows
                del heater
                save("series " + dt)
            elif phase == "grouped":
                setup("bf16")
                heater = Heater(torch, "bf16")
                heater.run(3)
                out = []
                # (model, linear, K, N, experts on the device): Qwen3-30B-A3B (hidden 2048, expert
                # 768), gpt-oss-120b (2880, 2880), DeepSeek-V3 (7168, 2048); gate and up fused.
                for name, lin, k, n, g in (
                    ("qwen3-30b-a3b", "gate_up", 2048, 1536, 16), ("qwen3-30b-a3b", "down", 768, 2048, 16),
                    ("gpt-oss-120b", "gate_up", 2880, 5760, 16), ("gpt-oss-120b", "down", 2880, 2880, 16),
                    ("deepseek-v3", "gate_up", 7168, 4096, 8), ("deepseek-v3", "down", 2048, 7168, 8),
                ):
                    for r in (128, 256, 512, 1024, 2048, 4096):
                        row = {"model": name, "linear": lin, "k": k, "n": n, "experts": g, "rows": r}
                        try:
                            a = torch.randn(g * r, k, device="cuda", dtype=torch.bfloat16)
                            b = torch.randn(g, n, k, device="cuda", dtype=torch.bfloat16).transpose(-2, -1)
                            offs = torch.arange(r, g * r + 1, r, device="cuda", dtype=torch.int32)
                            row["grouped_s"] = steady_seconds(
                                torch, heater, lambda: torch._grouped_mm(a, b, offs=offs), 10)
                        except Exception as e:  # noqa: BLE001
                            fatal(e)
                            row["grouped_s"] = "error: %r" % (e,)
                        for tag, m in (("dense_expert_s", r), ("dense_all_s", g * r)):
                            try:
                                fn = operands(torch, "bf16", m, n, k)
                                row[tag] = steady_seconds(torch, heater, fn, 10)
                                del fn
                            except Exception as e:  # noqa: BLE001
                                fatal(e)
                                row[tag] = "error: %r" % (e,)
                        out.append(row)
                res["grouped"] = out
                del heater
                save("grouped")
            elif phase == "burst":
                setup(dt)
                table = {}
                for n in N:
                    for k in K:
                        for m in M:
                            try:
                                fn = operands(torch, dt, m, n, k)
                                table["%d,%d,%d" % (m, n, k)] = graph_seconds(torch, fn, calls=calls_for(m, n, k))
                                del fn
                            except Exception as e:  # noqa: BLE001
                                fatal(e)
                                table["%d,%d,%d" % (m, n, k)] = "error: %r" % (e,)
                res.setdefault("burst", {})[dt] = table
                save("burst " + dt)
        except Exception as e:  # noqa: BLE001
            res.setdefault("errors", {})[phase + ":" + dt] = "%r" % (e,)
            save("FAILED " + phase)
            if "illegal" in repr(e) or "AcceleratorError" in repr(e):
                break  # the context is lost: nothing after this can run
    torch.backends.cuda.matmul.allow_tf32 = False

    # A short table last (the reply carries the end of the output).
    peaks = {"bf16": 989.5e12, "fp8": 1978.9e12, "tf32": 494.7e12, "fp32": 66.9e12}
    for dt, table in res.get("steady", {}).items():
        burst = res.get("burst", {}).get(dt, {})
        effs = []
        for key, s in table.items():
            if isinstance(s, float):
                m, n, k = map(int, key.split(","))
                b = burst.get(key)
                effs.append((2 * m * n * k / s / peaks[dt], b / s if isinstance(b, float) else None, key))
        effs.sort(reverse=True)
        ratios = [x[1] for x in effs if x[1] is not None]
        print(dt, "steady best %.3f at %s; burst/steady time median %s" % (
            effs[0][0], effs[0][2], "%.3f" % statistics.median(ratios) if ratios else "-"), flush=True)
    for dt, rows in res.get("series", {}).items():
        first, last = rows[0], rows[-1]
        print(dt, "series: %.0f -> %.0f TFLOP/s, %s -> %s MHz, %s -> %s W" % (
            first["flops_per_s"] / 1e12, last["flops_per_s"] / 1e12, first.get("sm_mhz"), last.get("sm_mhz"),
            first.get("power_w"), last.get("power_w")), flush=True)
    for row in res.get("grouped", []):
        print(row["model"], row["linear"], row["rows"], {k: (round(v * 1e6, 1) if isinstance(v, float) else v)
                                                        for k, v in row.items() if k.endswith("_s")}, flush=True)


if __name__ == "__main__":
    main()
