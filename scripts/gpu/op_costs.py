#!/usr/bin/env python3
"""Measure what eager PyTorch's non-GEMM ops cost on one GPU: device-level constants for tally's step time.

For each op as Hugging Face models run it (their own modules where they write one: LlamaRMSNorm,
NewGELUActivation, apply_rotary_pos_emb, ForCausalLMLoss's upcast + cross-entropy) this times the
forward and the forward + backward at a size where launches do not matter (CUDA events, median of
10 after 3 warm-ups), counts the kernels each launches (torch.profiler), and expresses the time as
bytes per element of the op's output at the device's measured copy bandwidth. tally's eager kernel
table (src/estimate/kernel_costs.cc) takes those bytes; a device's own bandwidth turns them back
into seconds. The AdamW rows do the same per parameter for PyTorch's three implementations.

    python3 scripts/gpu/op_costs.py --out "$OUT/op_costs.json"
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_time import graph_seconds  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "op_costs.json"))
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile
    dev = "cuda"
    bf16, fp32 = torch.bfloat16, torch.float32
    sync = torch.cuda.synchronize
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "ops": {}}
    try:
        import transformers
        res["transformers"] = transformers.__version__
    except Exception as e:  # noqa: BLE001
        res["transformers"] = repr(e)

    def timed(fn, reps=10):
        for _ in range(3):
            fn()
        sync()
        times = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            sync()
            times.append(a.elapsed_time(b) / 1000)
        return statistics.median(times)

    def kernels(fn):
        return gpu_time(fn)[1]

    def gpu_time(fn):
        """(seconds per call, None) with the call's kernels back to back (graph_time.py), or
        (None, the error) when the call cannot be captured."""
        try:
            return graph_seconds(torch, fn, calls=20, replays=10, warmups=3), None
        except Exception as e:  # noqa: BLE001
            return None, repr(e)[:200]

    def kernels(fn):
        return gpu_time(fn)[1]

    def gpu_time(fn, reps=10):
        """The op's GPU time alone: 20 calls captured in one CUDA graph, replayed, so no launch or
        autograd start-up sits between its kernels, as in a step whose queue the host keeps full.
        Returns (seconds per call, None), or the wall time per call if capture fails."""
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    fn()
            torch.cuda.current_stream().wait_stream(side)
            sync()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(20):
                    fn()
            graph.replay()
            sync()
            times = []
            for _ in range(reps):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                graph.replay()
                b.record()
                sync()
                times.append(a.elapsed_time(b) / 1000 / 20)
            del graph
            return statistics.median(times), None
        except Exception as e:  # noqa: BLE001
            return None, repr(e)[:200]

    def kernels(fn):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            sync()
        n = 0
        for e in prof.key_averages():
            if "CUDA" in str(getattr(e, "device_type", "")) and "#" not in e.key:
                n += e.count
        return n

    big = torch.empty(1 << 28, device=dev, dtype=bf16)
    dst = torch.empty_like(big)
    copy = timed(lambda: dst.copy_(big))
    bw = 2 * big.numel() * 2 / copy
    res["copy_bytes_per_second"] = bw
    del big, dst

    def record(name, elements, fwd, fwd_bwd, note):
        r = {"elements": elements, "note": note}
        try:
            tf = timed(fwd)
            tb = timed(fwd_bwd)
            gf, ef = gpu_time(fwd)
            gb, eb = gpu_time(fwd_bwd)
            r.update(forward_seconds=tf, forward_backward_seconds=tb,
                     wall_forward_bytes_per_element=tf * bw / elements,
                     wall_backward_bytes_per_element=(tb - tf) * bw / elements,
                     forward_kernels=kernels(fwd), forward_backward_kernels=kernels(fwd_bwd))
            if gf is not None and gb is not None:
                r.update(forward_gpu_seconds=gf, forward_backward_gpu_seconds=gb,
                         forward_bytes_per_element=gf * bw / elements,
                         backward_bytes_per_element=(gb - gf) * bw / elements)
            else:
                r["graph_error"] = ef or eb
        except Exception as e:  # noqa: BLE001
            r["error"] = repr(e)[:400]
        res["ops"][name] = r
        print(name, json.dumps(r), flush=True)

    tokens, h = 8192, 2048
    for dt, tag in ((bf16, "bf16"), (fp32, "fp32")):
        x = torch.randn(tokens, h, device=dev, dtype=dt, requires_grad=True)
        g = torch.randn(tokens, h, device=dev, dtype=dt)
        try:
            from transformers.models.llama.modeling_llama import LlamaRMSNorm
            norm = LlamaRMSNorm(h).to(dev, dt)
            record("rmsnorm_hf_" + tag, tokens * h, lambda: norm(x),
                   lambda: norm(x).backward(g), "transformers LlamaRMSNorm (fp32 upcast, pow, mean, rsqrt, mul)")
        except Exception as e:  # noqa: BLE001
            res["ops"]["rmsnorm_hf_" + tag] = {"error": repr(e)}
        ln = torch.nn.LayerNorm(h).to(dev, dt)
        record("layernorm_" + tag, tokens * h, lambda: ln(x), lambda: ln(x).backward(g), "torch.nn.LayerNorm")
        try:
            rms = torch.nn.RMSNorm(h).to(dev, dt)
            record("rmsnorm_torch_" + tag, tokens * h, lambda: rms(x), lambda: rms(x).backward(g),
                   "torch.nn.RMSNorm")
        except Exception as e:  # noqa: BLE001
            res["ops"]["rmsnorm_torch_" + tag] = {"error": repr(e)}
        record("residual_add_" + tag, tokens * h, lambda: x + g, lambda: (x + g).backward(g), "a + b")
        try:
            from transformers.activations import NewGELUActivation
            gelu_new = NewGELUActivation()
            record("gelu_new_" + tag, tokens * h, lambda: gelu_new(x), lambda: gelu_new(x).backward(g),
                   "transformers NewGELUActivation (tanh formula op by op)")
        except Exception as e:  # noqa: BLE001
            res["ops"]["gelu_new_" + tag] = {"error": repr(e)}
        record("gelu_" + tag, tokens * h, lambda: F.gelu(x), lambda: F.gelu(x).backward(g), "F.gelu")
        u = torch.randn(tokens, h, device=dev, dtype=dt, requires_grad=True)
        record("silu_mul_" + tag, tokens * h, lambda: F.silu(x) * u, lambda: (F.silu(x) * u).backward(g),
               "silu(gate) * up: elements are the output's")
        record("dropout0_" + tag, tokens * h, lambda: F.dropout(x, 0.0, True),
               lambda: F.dropout(x, 0.0, True).backward(g), "F.dropout(p=0, training)")
        record("dropout_" + tag, tokens * h, lambda: F.dropout(x, 0.1, True),
               lambda: F.dropout(x, 0.1, True).backward(g), "F.dropout(p=0.1, training)")
        record("cast_to_fp32_from_" + tag, tokens * h, lambda: x.float(), lambda: x.float().backward(g.float()),
               "x.float()")
        del x, g, u
    try:
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
        b, heads, kvh, s, d = 4, 32, 8, 2048, 64
        q = torch.randn(b, heads, s, d, device=dev, dtype=bf16, requires_grad=True)
        k = torch.randn(b, kvh, s, d, device=dev, dtype=bf16, requires_grad=True)
        cos = torch.randn(b, s, d, device=dev, dtype=bf16)
        sin = torch.randn(b, s, d, device=dev, dtype=bf16)
        gq, gk = torch.randn_like(q), torch.randn_like(k)

        def rope_fb():
            qo, ko = apply_rotary_pos_emb(q, k, cos, sin)
            torch.autograd.backward([qo, ko], [gq, gk])
        record("rope_hf_bf16", q.numel() + k.numel(), lambda: apply_rotary_pos_emb(q, k, cos, sin), rope_fb,
               "transformers apply_rotary_pos_emb on q and k; elements are q's and k's")
        del q, k, gq, gk
    except Exception as e:  # noqa: BLE001
        res["ops"]["rope_hf_bf16"] = {"error": repr(e)}
    try:
        from transformers.models.llama.modeling_llama import LlamaRMSNorm, apply_rotary_pos_emb
        b, s_, heads, kvh, d = 4, 2048, 16, 8, 128
        qp = torch.randn(b, s_, heads * d, device=dev, dtype=bf16, requires_grad=True)
        kp = torch.randn(b, s_, kvh * d, device=dev, dtype=bf16, requires_grad=True)
        cos = torch.randn(b, s_, d, device=dev, dtype=bf16)
        sin = torch.randn(b, s_, d, device=dev, dtype=bf16)
        qn, kn = LlamaRMSNorm(d).to(dev, bf16), LlamaRMSNorm(d).to(dev, bf16)

        def layout(norm):
            q = qp.view(b, s_, heads, d)
            k = kp.view(b, s_, kvh, d)
            if norm:
                q, k = qn(q), kn(k)
            return apply_rotary_pos_emb(q.transpose(1, 2), k.transpose(1, 2), cos, sin)

        def back(norm):
            qo, ko = layout(norm)
            torch.autograd.backward([qo, ko], [torch.ones_like(qo), torch.ones_like(ko)])
        n = qp.numel() + kp.numel()
        record("rope_hf_layout_bf16", n, lambda: layout(False), lambda: back(False),
               "apply_rotary_pos_emb on q and k as Hugging Face lays them out (view, transpose): head_dim 128")
        record("qk_norm_rope_hf_layout_bf16", n, lambda: layout(True), lambda: back(True),
               "Qwen3's per-head RMSNorm on q and k (rows of 128) then RoPE, Hugging Face's layout")
        del qp, kp
    except Exception as e:  # noqa: BLE001
        res["ops"]["rope_hf_layout_bf16"] = {"error": repr(e)}
    for width in (1024, 4096):
        try:
            from transformers.models.llama.modeling_llama import LlamaRMSNorm
            xw = torch.randn(8192, width, device=dev, dtype=bf16, requires_grad=True)
            gw = torch.randn_like(xw)
            nw = LlamaRMSNorm(width).to(dev, bf16)
            record("rmsnorm_hf_bf16_h%d" % width, xw.numel(), lambda: nw(xw), lambda: nw(xw).backward(gw),
                   "LlamaRMSNorm at hidden %d" % width)
            del xw, gw
        except Exception as e:  # noqa: BLE001
            res["ops"]["rmsnorm_hf_bf16_h%d" % width] = {"error": repr(e)}
    # The loss as Hugging Face computes it: bf16 logits upcast to fp32, then cross-entropy.
    for tok, vocab in ((4096, 128256), (4096, 50257)):
        logits = torch.randn(tok, vocab, device=dev, dtype=bf16, requires_grad=True)
        labels = torch.randint(0, vocab, (tok,), device=dev)
        record("loss_hf_bf16_v%d" % vocab, tok * vocab, lambda: F.cross_entropy(logits.float(), labels),
               lambda: F.cross_entropy(logits.float(), labels).backward(),
               "logits.float() then F.cross_entropy; elements are the logits'")
        del logits
        logits = torch.randn(tok, vocab, device=dev, dtype=fp32, requires_grad=True)
        record("loss_fp32_v%d" % vocab, tok * vocab, lambda: F.cross_entropy(logits, labels),
               lambda: F.cross_entropy(logits, labels).backward(), "F.cross_entropy on fp32 logits")
        del logits
    emb = torch.nn.Embedding(128256, 2048).to(dev, bf16)
    ids = torch.randint(0, 128256, (8192,), device=dev)
    gy = torch.randn(8192, 2048, device=dev, dtype=bf16)
    record("embedding_bf16", 8192 * 2048, lambda: emb(ids), lambda: emb(ids).backward(gy),
           "nn.Embedding(128256, 2048); elements are the output's; backward zero-fills the table's gradient")
    del emb
    # AdamW: seconds per parameter for each implementation, bf16 and fp32 weights, 64 tensors of 16 Mi.
    for dt, tag in ((bf16, "bf16"), (fp32, "fp32")):
        params = [torch.nn.Parameter(torch.randn(1 << 24, device=dev, dtype=dt)) for _ in range(64)]
        for p in params:
            p.grad = torch.randn_like(p)
        n = 64 << 24
        for impl in ("foreach", "fused", "for-loop"):
            kw = {"foreach": True} if impl == "foreach" else {"fused": True} if impl == "fused" else {"foreach": False}
            try:
                opt = torch.optim.AdamW(params, lr=1e-4, **kw)
                t = timed(opt.step, reps=5)
                r = {"params": n, "seconds": t, "bytes_per_param": t * bw / n, "kernels": kernels(opt.step)}
                del opt
            except Exception as e:  # noqa: BLE001
                r = {"error": repr(e)[:300]}
            res["ops"]["adamw_%s_%s" % (impl, tag)] = r
            print("adamw", impl, tag, json.dumps(r), flush=True)
        del params
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    t0 = time.time()
    main()
    print("done in %.1f s" % (time.time() - t0), file=sys.stderr)
