#!/usr/bin/env python3
"""Time real training steps of Hugging Face models on one GPU, and the device-level costs behind them.

Reference data for tally's step-time model (issue 29), in three parts:

  micro     device-level facts the model takes its constants from: the host's cost of dispatching
            one eager PyTorch op (an in-place add on one element, back to back, so the GPU idles
            and the wall time per op is the host's), the same for a small matmul, the GPU time of
            one tiny kernel (CUDA events around a CUDA graph of 1,000 of them), and the bandwidth of
            a large bf16 copy.
  cases     steady-state step times: 3 warm-up steps, then 6 steps timed as one (synchronised at
            both ends only), forward + loss + backward + AdamW + zero_grad, as a Hugging Face loop
            runs them. Random weights from inline configs (scripts/gpu/step_peaks.py), no download.
  profile   for a few cases, one step under torch.profiler: GPU kernel time by kind (GEMM,
            attention, optimizer, the rest) and the number of kernels, to set beside tally's parts.

Every case is isolated (an OOM or a missing package is recorded and the run goes on) and the JSON
file is rewritten after each, so a timeout keeps what finished.

    python3 scripts/gpu/step_times.py --out "$OUT/step_times.json"
    python3 scripts/gpu/step_times.py --only gpt2_fp32_b4_s1024 --no-profile
"""

import argparse
import gc
import json
import os
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import step_peaks  # noqa: E402  (same folder: model configs, model building, environment)

case = step_peaks.case

# Held out from tally's constants: tally takes nothing from these step times.
CASES = [
    case("gpt2_fp32_b1_s1024", "gpt2-small", "fp32", 1, 1024),
    case("gpt2_fp32_b4_s1024", "gpt2-small", "fp32", 4, 1024),
    case("gpt2_fp32_b16_s1024", "gpt2-small", "fp32", 16, 1024),
    case("gpt2_amp_b8_s1024", "gpt2-small", "fp32", 8, 1024, autocast=True),
    case("gpt2_bf16_b8_s1024", "gpt2-small", "bf16", 8, 1024),
    case("llama1b_bf16_b1_s2048", "llama-3.2-1b", "bf16", 1, 2048),
    case("llama1b_bf16_b4_s2048", "llama-3.2-1b", "bf16", 4, 2048),
    case("llama1b_bf16_gc_b4_s2048", "llama-3.2-1b", "bf16", 4, 2048, grad_ckpt=True),
    case("llama1b_amp_b1_s2048", "llama-3.2-1b", "fp32", 1, 2048, autocast=True),
    case("llama1b_bf16_fused_b1_s2048", "llama-3.2-1b", "bf16", 1, 2048, impl="fused"),
    case("llama1b_bf16_forloop_b1_s2048", "llama-3.2-1b", "bf16", 1, 2048, impl="for-loop"),
    case("qwen3_0.6b_bf16_b4_s2048", "qwen3-0.6b", "bf16", 4, 2048),
    case("llama3b_bf16_b1_s2048", "llama-3.2-3b", "bf16", 1, 2048),
    case("llama3b_bf16_gc_b4_s2048", "llama-3.2-3b", "bf16", 4, 2048, grad_ckpt=True),
    case("phi2_amp_b1_s1024", "phi-2", "fp32", 1, 1024, autocast=True),
    case("llama8b_lora32_bf16_gc_b1_s4096", "llama-3-8b", "bf16", 1, 4096, grad_ckpt=True, lora_rank=32),
    case("llama8b_bf16_gc_b1_s4096", "llama-3-8b", "bf16", 1, 4096, grad_ckpt=True),
    # fp32 weights with TF32 matmuls (torch.backends.cuda.matmul.allow_tf32): tally's --precision tf32.
    dict(case("gpt2_tf32_b4_s1024", "gpt2-small", "fp32", 4, 1024), tf32=True),
    dict(case("gpt2_tf32_b16_s1024", "gpt2-small", "fp32", 16, 1024), tf32=True),
    dict(case("llama1b_tf32_b1_s2048", "llama-3.2-1b", "fp32", 1, 2048), tf32=True),
    dict(case("llama1b_tf32_b4_s2048", "llama-3.2-1b", "fp32", 4, 2048), tf32=True),
    # The model and its loss under torch.compile (the optimizer eager), as torchtitan compiles them:
    # tally's --kernels fused --loss-kernel fused, never measured on a whole step so far. Not yet in
    # scripts/validate-time's MEASURED; the warm-up steps include the compilation.
    dict(case("llama1b_bf16_compile_b4_s2048", "llama-3.2-1b", "bf16", 4, 2048), compile=True),
    dict(case("llama3b_bf16_compile_b1_s2048", "llama-3.2-3b", "bf16", 1, 2048), compile=True),
    dict(case("qwen3_0.6b_bf16_compile_b4_s2048", "qwen3-0.6b", "bf16", 4, 2048), compile=True),
]

PROFILED = ["gpt2_fp32_b4_s1024", "llama1b_bf16_b1_s2048", "llama3b_bf16_b1_s2048"]

WARMUP, TIMED = 3, 6


def micro(torch):
    """Device-level costs: host dispatch per eager op, tiny-kernel GPU time, copy bandwidth."""
    r = {}
    sync = torch.cuda.synchronize
    x = torch.zeros(1, device="cuda")
    for _ in range(200):
        x.add_(1)
    sync()
    n = 5000
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        sync()
        runs.append((time.perf_counter() - t0) / n)
    r["host_seconds_per_inplace_add"] = statistics.median(runs)
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            y = x + 1  # noqa: F841  (an allocation through the caching allocator, as most ops do)
        sync()
        runs.append((time.perf_counter() - t0) / n)
    r["host_seconds_per_out_of_place_add"] = statistics.median(runs)
    a = torch.randn(8, 64, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    for _ in range(100):
        torch.nn.functional.linear(a, w)
    sync()
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(2000):
            torch.nn.functional.linear(a, w)
        sync()
        runs.append((time.perf_counter() - t0) / 2000)
    r["host_seconds_per_small_linear"] = statistics.median(runs)
    # GPU time of a tiny kernel: 1,000 in-place adds captured in a CUDA graph, replayed.
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(10):
                x.add_(1)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(1000):
                x.add_(1)
        g.replay()
        sync()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        runs = []
        for _ in range(5):
            start.record()
            g.replay()
            end.record()
            sync()
            runs.append(start.elapsed_time(end) / 1000 / 1000)
        r["gpu_seconds_per_tiny_kernel"] = statistics.median(runs)
    except Exception as e:  # noqa: BLE001
        r["gpu_seconds_per_tiny_kernel"] = "error: %r" % (e,)
    big = torch.empty(1 << 29, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(big)
    dst.copy_(big)
    sync()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        dst.copy_(big)
    end.record()
    sync()
    r["copy_bytes_per_second"] = 10 * 2 * big.numel() * 2 / (start.elapsed_time(end) / 1000)
    del big, dst
    return r


KINDS = [
    ("attention", ("flash", "fmha", "attention", "sdpa", "cudnn", "efficient")),
    ("gemm", ("gemm", "cutlass", "xmma", "nvjet", "cublas", "matmul", "sm90", "sm100", "splitk")),
    ("optimizer", ("multi_tensor", "foreach", "adam", "fused_adam")),
    ("loss", ("nll", "log_softmax", "softmax", "cross_entropy")),
    ("cast_copy", ("copy", "convert", "cast", "to_copy")),
]


def kind_of(name):
    low = name.lower()
    for kind, words in KINDS:
        if any(w in low for w in words):
            return kind
    return "other"


def profile_step(torch, step):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    by_kind, kernels, top = {}, 0, []
    for e in prof.key_averages():
        dt = getattr(e, "device_type", None)
        if dt is None or "CUDA" not in str(dt):
            continue
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = getattr(e, "self_cuda_time_total", 0)
        if us <= 0:
            continue
        k = kind_of(e.key)
        d = by_kind.setdefault(k, {"seconds": 0.0, "kernels": 0})
        d["seconds"] += us / 1e6
        d["kernels"] += e.count
        kernels += e.count
        top.append((us / 1e6, e.count, e.key[:120], k))
    top.sort(reverse=True)
    return {"by_kind": by_kind, "kernels": kernels,
            "gpu_seconds": sum(d["seconds"] for d in by_kind.values()),
            "top": [{"seconds": s, "count": c, "name": n, "kind": k} for s, c, n, k in top[:40]]}


class ClockSampler:
    """The SM clock and board power every 5 ms on a thread (NVML), over the timed steps: a step's
    GEMMs run at the clock its average power leaves them under the board's limit."""

    def __init__(self):
        import threading

        import pynvml

        pynvml.nvmlInit()
        self.nv, self.h = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        self.rows, self.stop = [], threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop.is_set():
            self.rows.append((self.nv.nvmlDeviceGetClockInfo(self.h, self.nv.NVML_CLOCK_SM),
                              self.nv.nvmlDeviceGetPowerUsage(self.h) / 1000))
            time.sleep(0.005)

    def summary(self):
        self.stop.set()
        self.thread.join()
        mhz = sorted(r[0] for r in self.rows)
        watts = [r[1] for r in self.rows]
        return {"samples": len(mhz), "sm_mhz_median": statistics.median(mhz), "sm_mhz_p10": mhz[len(mhz) // 10],
                "sm_mhz_p90": mhz[9 * len(mhz) // 10], "power_w_mean": statistics.mean(watts)}


def run_case(torch, c, do_profile, clocks=False):
    res = {"name": c["name"], "config": dict(c), "error": None}
    model = opt = x = params = None
    torch.backends.cuda.matmul.allow_tf32 = bool(c.get("tf32"))
    try:
        model, extra = step_peaks.build_model(torch, c, False, "cuda")
        res.update(extra)
        total, trainable, _, _ = step_peaks.param_stats(model)
        if c.get("compile"):
            model = torch.compile(model)
        res.update(params=total, trainable=trainable)
        params = [p for p in model.parameters() if p.requires_grad]
        impl = c.get("optimizer_impl")
        if impl == "fused":
            opt = torch.optim.AdamW(params, fused=True)
        elif impl == "for-loop":
            opt = torch.optim.AdamW(params, foreach=False)
        else:
            opt = torch.optim.AdamW(params)
        vocab = model.config.vocab_size if not c["lora_rank"] else model.base_model.model.config.vocab_size
        gen = torch.Generator(device="cpu").manual_seed(0)
        x = torch.randint(0, vocab, (c["b"], c["s"]), generator=gen).to("cuda")

        def step():
            if c["autocast_bf16"]:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    out = model(input_ids=x, labels=x, use_cache=False)
            else:
                out = model(input_ids=x, labels=x, use_cache=False)
            out.loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        for _ in range(WARMUP):
            step()
        torch.cuda.synchronize()
        sampler = ClockSampler() if clocks else None
        t0 = time.perf_counter()
        for _ in range(TIMED):
            step()
        torch.cuda.synchronize()
        res["step_seconds"] = (time.perf_counter() - t0) / TIMED
        if sampler:
            res["clocks"] = sampler.summary()
        # The forward alone (no grad), for the split.
        with torch.no_grad():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(3):
                if c["autocast_bf16"]:
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        model(input_ids=x, labels=x, use_cache=False)
                else:
                    model(input_ids=x, labels=x, use_cache=False)
            torch.cuda.synchronize()
            res["no_grad_forward_seconds"] = (time.perf_counter() - t0) / 3
        if do_profile:
            res["profile"] = profile_step(torch, step)
    except Exception as e:  # noqa: BLE001
        res["error"] = "%s: %s" % (type(e).__name__, str(e)[:600])
        res["traceback"] = traceback.format_exc()[-1500:]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
        del model, opt, x, params
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "step_times.json"))
    ap.add_argument("--only", default="")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--profile-all", action="store_true", help="profile every case run")
    ap.add_argument("--clocks", action="store_true", help="sample the SM clock and power over the timed steps")
    ap.add_argument("--no-micro", action="store_true")
    args = ap.parse_args()
    cases = [c for c in CASES if not args.only or c["name"] in args.only.split(",")]
    t_start = time.time()
    import torch
    results = {"env": step_peaks.env_info(torch, "cuda"), "micro": None, "cases": []}

    def save():
        results["total_seconds"] = round(time.time() - t_start, 2)
        with open(args.out + ".tmp", "w") as f:
            json.dump(results, f, indent=1)
        os.replace(args.out + ".tmp", args.out)

    try:
        results["micro"] = None if args.no_micro else micro(torch)
    except Exception as e:  # noqa: BLE001
        results["micro"] = {"error": repr(e)}
    print(json.dumps({"micro": results["micro"]}), flush=True)
    save()
    for c in cases:
        r = run_case(torch, c, not args.no_profile and (args.profile_all or c["name"] in PROFILED), args.clocks)
        results["cases"].append(r)
        short = {k: v for k, v in r.items()
                 if k in ("name", "step_seconds", "no_grad_forward_seconds", "clocks", "error")}
        if "profile" in r:
            short["by_kind"] = r["profile"]["by_kind"]
        print(json.dumps(short), flush=True)
        save()
    print("done in %.1f s" % (time.time() - t_start), flush=True)


if __name__ == "__main__":
    main()
