#!/usr/bin/env python3
"""Measure real per-phase peak GPU memory of LLM training steps.

Reference data for tally's memory estimator: for a handful of published model
architectures (random weights built from inline `transformers` configs, no
download) this runs one warm-up training step and one measured step with
PyTorch's default AdamW (foreach on CUDA) and records, for the measured step:

  start_allocated  torch.cuda.memory_allocated() at step start
                   (weights + optimizer state; grads are None after
                   zero_grad(set_to_none=True))
  peak_forward     max_memory_allocated() during `out = model(input_ids=x, labels=x)`
                   (HF computes the loss inside forward)
  peak_backward    ... during `out.loss.backward()` (with `out` still alive)
  peak_optimizer   ... during `opt.step()`
  peak_step        max over the phases above and the zero_grad tail
  max_reserved     max of max_memory_reserved() over the phases
  end_*            memory_allocated() at the end of each phase
  seconds          wall time of the measured step (synchronised)

Each phase starts with torch.cuda.reset_peak_memory_stats() and ends with
torch.cuda.synchronize().  Once per run it also records the CUDA context size
(driver-level used memory minus the caching allocator's reserved memory), the
cuBLAS workspace, library versions and whether peft/bitsandbytes/flash_attn
import.

Every case is isolated: exceptions (OOM, missing class/package) are recorded in
the case's "error" field and the run goes on.  Results are printed as JSON lines
(flushed) and the whole results file is rewritten after every case, so partial
results survive a timeout.

Usage (on a machine with a CUDA GPU, torch and transformers installed):

    python3 scripts/gpu/step_peaks.py --out "$OUT/step_peaks.json"
    python3 scripts/gpu/step_peaks.py --only gpt2_fp32_b1_s1024,llama1b_bf16_b1_s2048
    python3 scripts/gpu/step_peaks.py --tiny      # shrunken configs, quick sanity run
    python3 scripts/gpu/step_peaks.py --list      # list case names

`--cpu` runs the same code on the CPU (memory numbers are then meaningless;
it only checks the code path, best combined with --tiny).
"""

import argparse
import gc
import importlib
import json
import os
import subprocess
import sys
import time
import traceback

MiB = 1 << 20


# --------------------------------------------------------------------------
# Model configs (published hyperparameters), built inline: no download.
# --------------------------------------------------------------------------

def gpt2_small_config(tiny):
    from transformers import GPT2Config
    kw = dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024)
    if tiny:
        kw.update(n_layer=2, n_embd=64, n_head=4, vocab_size=1000)
    return GPT2Config(use_cache=False, **kw)


def llama32_1b_config(tiny):
    from transformers import LlamaConfig
    kw = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
              num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
              tie_word_embeddings=True, rope_theta=500000.0,
              max_position_embeddings=131072, rms_norm_eps=1e-5)
    if tiny:
        kw.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=1000)
    return LlamaConfig(use_cache=False, **kw)


def qwen3_06b_config(tiny):
    from transformers import Qwen3Config  # may be missing in old versions
    kw = dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
              num_attention_heads=16, num_key_value_heads=8, head_dim=128,
              vocab_size=151936, tie_word_embeddings=True)
    if tiny:
        kw.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  vocab_size=1000)
    return Qwen3Config(use_cache=False, **kw)


def llama3_8b_config(tiny):
    from transformers import LlamaConfig
    kw = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
              num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
              tie_word_embeddings=False, rope_theta=500000.0,
              max_position_embeddings=8192, rms_norm_eps=1e-5)
    if tiny:
        kw.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=1000)
    return LlamaConfig(use_cache=False, **kw)


def llama32_3b_config(tiny):
    from transformers import LlamaConfig
    kw = dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
              num_attention_heads=24, num_key_value_heads=8, vocab_size=128256,
              tie_word_embeddings=True, rope_theta=500000.0,
              max_position_embeddings=131072, rms_norm_eps=1e-5)
    if tiny:
        kw.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=1000)
    return LlamaConfig(use_cache=False, **kw)


def phi2_config(tiny):
    from transformers import PhiConfig
    kw = dict(hidden_size=2560, intermediate_size=10240, num_hidden_layers=32,
              num_attention_heads=32, vocab_size=51200, partial_rotary_factor=0.4,
              hidden_act="gelu_new", max_position_embeddings=2048, layer_norm_eps=1e-5,
              resid_pdrop=0.1, embd_pdrop=0.0, attention_dropout=0.0, tie_word_embeddings=False)
    if tiny:
        kw.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, vocab_size=1000)
    return PhiConfig(use_cache=False, **kw)


MODELS = {
    "llama-3.2-3b": llama32_3b_config,
    "phi-2": phi2_config,
    "gpt2-small": gpt2_small_config,
    "llama-3.2-1b": llama32_1b_config,
    "qwen3-0.6b": qwen3_06b_config,
    "llama-3-8b": llama3_8b_config,
}

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def case(name, model, weights, b, s, autocast=False, grad_ckpt=False, lora_rank=None, impl=None):
    """One measurement case. weights: 'fp32' or 'bf16' (dtype of the parameters). impl: AdamW's
    implementation, None (PyTorch's default: foreach on CUDA), 'fused' or 'for-loop'."""
    return dict(name=name, model=model, weights=weights, b=b, s=s, autocast_bf16=autocast,
                gradient_checkpointing=grad_ckpt, lora_rank=lora_rank, optimizer_impl=impl,
                attn_implementation="sdpa", use_cache=False, optimizer="torch.optim.AdamW")


# Ordered by importance; the heaviest (8B LoRA) last.
CASES = [
    case("llama1b_bf16_b1_s2048", "llama-3.2-1b", "bf16", 1, 2048),
    case("gpt2_fp32_b1_s1024", "gpt2-small", "fp32", 1, 1024),
    case("gpt2_fp32_b4_s1024", "gpt2-small", "fp32", 4, 1024),
    case("gpt2_fp32_autocast_b4_s1024", "gpt2-small", "fp32", 4, 1024, autocast=True),
    case("llama1b_bf16_gc_b1_s2048", "llama-3.2-1b", "bf16", 1, 2048, grad_ckpt=True),
    case("llama1b_fp32_autocast_b1_s2048", "llama-3.2-1b", "fp32", 1, 2048, autocast=True),
    case("qwen3_0.6b_bf16_gc_b1_s4096", "qwen3-0.6b", "bf16", 1, 4096, grad_ckpt=True),
    case("llama8b_lora32_bf16_gc_b1_s4096", "llama-3-8b", "bf16", 1, 4096, grad_ckpt=True, lora_rank=32),
    case("llama8b_lora32_bf16_gc_b1_s8192", "llama-3-8b", "bf16", 1, 8192, grad_ckpt=True, lora_rank=32),
    # Held out: measured after tally's step model was written, to validate it (docs/validation.md).
    case("llama3b_bf16_b1_s2048", "llama-3.2-3b", "bf16", 1, 2048),
    case("llama1b_bf16_fused_b1_s2048", "llama-3.2-1b", "bf16", 1, 2048, impl="fused"),
    case("llama1b_bf16_forloop_gc_b2_s1024", "llama-3.2-1b", "bf16", 2, 1024, grad_ckpt=True, impl="for-loop"),
    case("phi2_fp32_autocast_b1_s1024", "phi-2", "fp32", 1, 1024, autocast=True),
    case("llama3b_bf16_gc_b4_s2048", "llama-3.2-3b", "bf16", 4, 2048, grad_ckpt=True),
    # Held out, measured after --lora-dtype fp32 (PEFT's fp32 adapters, their fp32 input copies) and
    # for the full fine-tune of an 8B model that tally's device figure said would not fit in 80 GB.
    case("llama1b_lora16_bf16_b1_s2048", "llama-3.2-1b", "bf16", 1, 2048, lora_rank=16),
    case("llama8b_bf16_gc_b1_s4096", "llama-3-8b", "bf16", 1, 4096, grad_ckpt=True),
]


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

def importable(mod):
    try:
        m = importlib.import_module(mod)
        return getattr(m, "__version__", True)
    except Exception as e:  # noqa: BLE001 - any failure means "not usable"
        return False if isinstance(e, ImportError) else "error: %r" % (e,)


def jsonable(v):
    """Make optimizer defaults etc. JSON-serialisable."""
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    return repr(v)


def env_info(torch, device):
    info = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "CUDA_MODULE_LOADING": os.environ.get("CUDA_MODULE_LOADING"),
        "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
    }
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except Exception as e:  # noqa: BLE001
        info["transformers"] = "error: %r" % (e,)
    for mod in ("peft", "bitsandbytes", "flash_attn", "accelerate"):
        info["importable_" + mod] = importable(mod)
    try:
        info["cudnn"] = torch.backends.cudnn.version()
    except Exception as e:  # noqa: BLE001
        info["cudnn"] = repr(e)
    info["allow_tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        info["nvidia_smi"] = out.stdout.strip() or out.stderr.strip()
    except Exception as e:  # noqa: BLE001
        info["nvidia_smi"] = "unavailable: %r" % (e,)
    import torch.optim
    info["adamw_defaults"] = jsonable(torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))]).defaults)
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        info["gpu_name"] = p.name
        info["gpu_total_memory"] = p.total_memory
        info["gpu_sm_count"] = p.multi_processor_count
    return info


def context_and_workspace(torch):
    """CUDA context size and cuBLAS workspace, measured before anything else runs."""
    r = {}
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # forces context creation + allocator init
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    r["total"] = total
    r["context_after_init"] = (total - free) - torch.cuda.memory_reserved()

    # cuBLAS workspace: allocated after the first bf16 matmul minus the tensors' bytes.
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    c = a @ b
    torch.cuda.synchronize()
    after = torch.cuda.memory_allocated()
    r["allocated_before_first_matmul"] = before
    r["cublas_workspace"] = after - before - c.numel() * c.element_size()
    r["allocated_after_first_matmul_minus_tensors"] = after - 3 * a.numel() * a.element_size()
    del a, b, c

    # One small fp32 matmul too (the brief's "one small matmul"), then the context size.
    x = torch.randn(64, 64, device="cuda")
    y = x @ x
    torch.cuda.synchronize()
    del x, y
    free, total = torch.cuda.mem_get_info()
    r["context_after_matmul"] = (total - free) - torch.cuda.memory_reserved()
    r["reserved_after_matmul"] = torch.cuda.memory_reserved()
    r["allocated_after_matmul"] = torch.cuda.memory_allocated()

    # Cross-check: how much allocator memory clearing the cuBLAS workspaces frees.
    try:
        a0 = torch.cuda.memory_allocated()
        torch._C._cuda_clearCublasWorkspaces()
        torch.cuda.synchronize()
        r["freed_by_clearCublasWorkspaces"] = a0 - torch.cuda.memory_allocated()
    except Exception as e:  # noqa: BLE001
        r["freed_by_clearCublasWorkspaces"] = "error: %r" % (e,)
    return r


# --------------------------------------------------------------------------
# One case
# --------------------------------------------------------------------------

def build_model(torch, c, tiny, device):
    """Random-init model on `device` directly (no CPU init of 8B params)."""
    from transformers import AutoModelForCausalLM
    cfg = MODELS[c["model"]](tiny)
    dtype = torch.bfloat16 if c["weights"] == "bf16" else torch.float32
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):  # init straight on the GPU
            try:
                model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa")
            except TypeError:  # very old transformers: no attn_implementation kwarg
                cfg._attn_implementation = "sdpa"
                model = AutoModelForCausalLM.from_config(cfg)
    finally:
        torch.set_default_dtype(old)
    model.to(device=device, dtype=dtype)  # as users do: model.to(torch.bfloat16)
    model.config.use_cache = False
    model.train()
    extra = {"attn_implementation_used": getattr(model.config, "_attn_implementation", None)}

    if c["gradient_checkpointing"]:
        model.gradient_checkpointing_enable()
        # transformers 4.x keeps the checkpoint function on the model; 5.x on the layers.
        fn = getattr(model, "_gradient_checkpointing_func", None)
        extra["gradient_checkpointing_func"] = repr(fn)[:300] if fn is not None else None
        extra["is_gradient_checkpointing"] = getattr(model, "is_gradient_checkpointing", None)
        if c["lora_rank"]:
            model.enable_input_require_grads()  # as PEFT users do

    if c["lora_rank"]:
        import peft  # ImportError -> recorded as the case's error (= skipped)
        from peft import LoraConfig, get_peft_model
        lcfg = LoraConfig(r=c["lora_rank"], lora_alpha=16, lora_dropout=0.0,
                          target_modules=LORA_TARGETS, bias="none", task_type="CAUSAL_LM")
        model = get_peft_model(model, lcfg)
        model.train()
        extra["peft_version"] = peft.__version__
    return model, extra


def param_stats(model):
    seen, total, trainable, by_dtype, trainable_by_dtype = set(), 0, 0, {}, {}
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        n = p.numel()
        total += n
        by_dtype[str(p.dtype)] = by_dtype.get(str(p.dtype), 0) + n
        if p.requires_grad:
            trainable += n
            trainable_by_dtype[str(p.dtype)] = trainable_by_dtype.get(str(p.dtype), 0) + n
    return total, trainable, by_dtype, trainable_by_dtype


def run_case(torch, c, tiny, device):
    cuda = device == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def reset():
        if cuda:
            torch.cuda.reset_peak_memory_stats()

    def peak():
        return torch.cuda.max_memory_allocated() if cuda else 0

    def alloc():
        return torch.cuda.memory_allocated() if cuda else 0

    def reserved_peak():
        return torch.cuda.max_memory_reserved() if cuda else 0

    res = {"name": c["name"], "config": dict(c), "params": None, "trainable": None,
           "start_allocated": None, "peak_forward": None, "peak_backward": None,
           "peak_optimizer": None, "peak_step": None, "max_reserved": None,
           "seconds": None, "error": None}
    if tiny:
        res["config"]["tiny"] = True
    model = opt = out = x = params = None
    t_build = time.time()
    try:
        res["allocated_before_build"] = alloc()
        model, extra = build_model(torch, c, tiny, device)
        res.update(extra)
        total, trainable, by_dtype, tby_dtype = param_stats(model)
        res.update(params=total, trainable=trainable, param_dtypes=by_dtype,
                   trainable_dtypes=tby_dtype)
        res["dtype"] = c["weights"]
        sync()
        res["allocated_after_build"] = alloc()
        res["build_seconds"] = round(time.time() - t_build, 3)

        params = [p for p in model.parameters() if p.requires_grad]
        impl = c.get("optimizer_impl")
        if impl == "fused":
            opt = torch.optim.AdamW(params, fused=True)
        elif impl == "for-loop":
            opt = torch.optim.AdamW(params, foreach=False)
        else:
            opt = torch.optim.AdamW(params)  # defaults: lr 1e-3, foreach/fused None -> foreach on CUDA
        res["optimizer_defaults"] = jsonable(opt.defaults)

        vocab = model.config.vocab_size if not c["lora_rank"] else model.base_model.model.config.vocab_size
        gen = torch.Generator(device="cpu").manual_seed(0)
        x = torch.randint(0, vocab, (c["b"], c["s"]), generator=gen).to(device)

        def fwd():
            if c["autocast_bf16"]:
                with torch.autocast(device, dtype=torch.bfloat16):
                    return model(input_ids=x, labels=x, use_cache=False)
            return model(input_ids=x, labels=x, use_cache=False)

        # Warm-up step (creates optimizer state, cuBLAS/cuDNN plans, allocator blocks).
        out = fwd()
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del out
        out = None
        sync()

        # Measured step.
        phase_reserved = []
        sync()
        t0 = time.time()
        res["start_allocated"] = alloc()
        res["start_reserved"] = torch.cuda.memory_reserved() if cuda else 0

        reset()
        out = fwd()
        sync()
        res["peak_forward"] = peak()
        res["end_forward"] = alloc()
        phase_reserved.append(reserved_peak())

        reset()
        out.loss.backward()
        sync()
        res["peak_backward"] = peak()
        res["end_backward"] = alloc()
        phase_reserved.append(reserved_peak())
        res["loss"] = float(out.loss.detach().float().item())

        reset()
        opt.step()
        sync()
        res["peak_optimizer"] = peak()
        res["end_optimizer"] = alloc()
        phase_reserved.append(reserved_peak())

        reset()
        opt.zero_grad(set_to_none=True)
        del out
        out = None
        sync()
        tail_peak = peak()
        phase_reserved.append(reserved_peak())
        res["seconds"] = round(time.time() - t0, 4)
        res["end_step"] = alloc()
        res["peak_step"] = max(res["peak_forward"], res["peak_backward"],
                               res["peak_optimizer"], tail_peak)
        res["max_reserved"] = max(phase_reserved)
        if cuda:
            res["peak_step_phase"] = ["forward", "backward", "optimizer", "zero_grad"][
                [res["peak_forward"], res["peak_backward"], res["peak_optimizer"], tail_peak]
                .index(res["peak_step"])]
    except Exception as e:  # noqa: BLE001 - record and continue (OOM, missing class, ...)
        res["error"] = "%s: %s" % (type(e).__name__, str(e)[:800])
        res["traceback"] = traceback.format_exc()[-2000:]
    finally:
        res["case_seconds"] = round(time.time() - t_build, 3)
        # Drop every reference (params holds the weights too) BEFORE empty_cache, so
        # the next case starts with no cached segments left over from this one.
        del model, opt, out, x, params
        gc.collect()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            res["allocated_after_cleanup"] = torch.cuda.memory_allocated()
    return res


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "step_peaks.json"))
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--tiny", action="store_true", help="shrink every config (sanity run)")
    ap.add_argument("--cpu", action="store_true", help="run on CPU (code-path check only)")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()

    cases = CASES
    if args.only:
        want = set(args.only.split(","))
        cases = [c for c in CASES if c["name"] in want]
    if args.list:
        for c in cases:
            print(c["name"])
        return

    t_start = time.time()
    import torch
    device = "cpu" if args.cpu or not torch.cuda.is_available() else "cuda"
    results = {"device": device, "env": None, "cuda_memory": None, "cases": []}

    def save():
        results["total_seconds"] = round(time.time() - t_start, 2)
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f, indent=1)
        os.replace(tmp, args.out)

    if device == "cuda":
        try:
            results["cuda_memory"] = context_and_workspace(torch)
        except Exception as e:  # noqa: BLE001
            results["cuda_memory"] = {"error": repr(e)}
        print(json.dumps({"cuda_memory": results["cuda_memory"]}), flush=True)
    try:
        results["env"] = env_info(torch, device)
    except Exception as e:  # noqa: BLE001
        results["env"] = {"error": repr(e), "torch": torch.__version__}
    print(json.dumps({"env": results["env"]}), flush=True)
    save()

    for c in cases:
        r = run_case(torch, c, args.tiny, device)
        results["cases"].append(r)
        short = {k: v for k, v in r.items() if k not in ("traceback", "config")}
        print(json.dumps(short), flush=True)
        save()
    print("done in %.1f s" % (time.time() - t_start), flush=True)


if __name__ == "__main__":
    main()
