#!/usr/bin/env python3
"""tally's memory.train.peak beside the real peaks that scripts/gpu/step_peaks.py measured on a GPU.

  scripts/gpu/compare.py [RESULTS.json]      (default docs/data/h100-step-peaks.json)

Each measured case maps to the tally command of the same step. The measured side is
torch.cuda.max_memory_allocated() over the step, less the cuBLAS workspaces PyTorch allocates through
its caching allocator (counted in tally's device figure, not in the peak: 64 MiB, two streams' worth,
measured at step start as start_allocated - weights - optimizer states). max_memory_reserved() over
the step against the peak gives the allocator's fragmentation. Prints a Markdown table."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TALLY = os.path.join(os.environ.get("TALLY_BUILD", os.path.join(ROOT, "build")), "tally")
WORKSPACES = 64 << 20
LORA = ["--lora", "32", "--lora-targets", "qkv,out,gate,up,down"]

# case name -> (tally model, flags); every case runs AdamW, the loss as Hugging Face computes it.
CASES = {
    "gpt2_fp32_b1_s1024": ("gpt2-small", ["--seq", "1024", "--precision", "fp32"]),
    "gpt2_fp32_b4_s1024": ("gpt2-small", ["--seq", "1024", "--batch", "4", "--precision", "fp32"]),
    "gpt2_fp32_autocast_b4_s1024": ("gpt2-small", ["--seq", "1024", "--batch", "4", "--precision", "amp-bf16"]),
    "llama1b_bf16_b1_s2048": ("llama-3.2-1b", ["--seq", "2048", "--precision", "bf16"]),
    "llama1b_bf16_gc_b1_s2048": ("llama-3.2-1b", ["--seq", "2048", "--precision", "bf16", "--recompute", "full"]),
    "llama1b_fp32_autocast_b1_s2048": ("llama-3.2-1b", ["--seq", "2048", "--precision", "amp-bf16"]),
    "qwen3_0.6b_bf16_gc_b1_s4096": ("qwen3-0.6b", ["--seq", "4096", "--precision", "bf16", "--recompute", "full"]),
    # PEFT keeps the adapters in fp32 in a bf16 model: fp32 adapter weights, gradients and states.
    "llama8b_lora32_bf16_gc_b1_s4096": ("llama-3-8b", ["--seq", "4096", "--precision", "bf16", "--recompute", "full",
                                                       "--grad-dtype", "fp32", "--state-dtype", "fp32"] + LORA),
    "llama8b_lora32_bf16_gc_b1_s8192": ("llama-3-8b", ["--seq", "8192", "--precision", "bf16", "--recompute", "full",
                                                       "--grad-dtype", "fp32", "--state-dtype", "fp32"] + LORA),
    "llama3b_bf16_b1_s2048": ("llama-3.2-3b", ["--seq", "2048", "--precision", "bf16"]),
    "llama1b_bf16_fused_b1_s2048": ("llama-3.2-1b", ["--seq", "2048", "--precision", "bf16",
                                                     "--optimizer-impl", "fused"]),
    "llama1b_bf16_forloop_gc_b2_s1024": ("llama-3.2-1b", ["--seq", "1024", "--batch", "2", "--precision", "bf16",
                                                          "--recompute", "full", "--optimizer-impl", "for-loop"]),
    "phi2_fp32_autocast_b1_s1024": ("phi-2", ["--seq", "1024", "--precision", "amp-bf16"]),
    "llama3b_bf16_gc_b4_s2048": ("llama-3.2-3b", ["--seq", "2048", "--batch", "4", "--precision", "bf16",
                                                  "--recompute", "full"]),
    "llama1b_lora16_bf16_b1_s2048": ("llama-3.2-1b", ["--seq", "2048", "--precision", "bf16", "--lora", "16",
                                                      "--lora-targets", "qkv,out,gate,up,down",
                                                      "--grad-dtype", "fp32", "--state-dtype", "fp32"]),
    "llama8b_bf16_gc_b1_s4096": ("llama-3-8b", ["--seq", "4096", "--precision", "bf16", "--recompute", "full"]),
}
HELD_OUT = {"llama3b_bf16_b1_s2048", "llama1b_bf16_fused_b1_s2048", "llama1b_bf16_forloop_gc_b2_s1024",
            "phi2_fp32_autocast_b1_s1024", "llama3b_bf16_gc_b4_s2048", "llama1b_lora16_bf16_b1_s2048",
            "llama8b_bf16_gc_b1_s4096"}


def tally(model, flags):
    args = [TALLY, "memory", model, "--mode", "train", "--format", "json"] + flags
    train = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)["memory"]["train"]
    return train


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "data", "h100-step-peaks.json")
    cases = [c for c in json.load(open(path))["cases"] if c.get("name") in CASES]
    mib = 1 << 20
    print("| case | held out | real peak (MiB) | tally peak (MiB) | tally / real | real phase | tally phase, node |"
          " ledger total / real | reserved / real |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in cases:
        if c.get("error"):
            print(f"| {c['name']} | | failed: {c['error'][:60]} | | | | | | |")
            continue
        model, flags = CASES[c["name"]]
        t = tally(model, flags)
        real = c["peak_step"] - WORKSPACES
        print(f"| {c['name']} | {'yes' if c['name'] in HELD_OUT else ''} | {real / mib:,.0f} | {t['peak'] / mib:,.0f} |"
              f" {t['peak'] / real:.3f} | {c.get('peak_step_phase')} | {t['peak_phase']}, {t['peak_at']} |"
              f" {t['total'] / real:.3f} | {c['max_reserved'] / c['peak_step']:.3f} |")


if __name__ == "__main__":
    main()
