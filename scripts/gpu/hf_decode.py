#!/usr/bin/env python3
"""Hugging Face `generate` on one GPU, eager as its scripts run it: the time of a generated token.

Random bf16 weights from the repository's copy of each model's config.json (tests/data/hf), no
download. Each case times generate() for 1 new token and for 1 + `--new` tokens (greedy, no early
stop), after a warm-up; the decode step is their difference over `--new`. Validation data for
tally's eager decode (host launches per kernel); nothing in tally is fitted to it.

    python3 scripts/gpu/hf_decode.py --out "$OUT/hf_decode.json"
"""

import argparse
import json
import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = [("llama-3.2-1b-instruct", [1, 8]), ("llama-3.1-8b", [1, 8, 32])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "hf_decode.json"))
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=64)
    args = ap.parse_args()
    import torch
    import transformers
    res = {"torch": torch.__version__, "transformers": transformers.__version__,
           "gpu": torch.cuda.get_device_name(0), "prompt": args.prompt, "new": args.new, "cases": {}}
    for name, batches in CASES:
        with open(os.path.join(ROOT, "tests/data/hf", name + ".json")) as f:
            raw = json.load(f)
        cfg = transformers.AutoConfig.for_model(raw.pop("model_type"), **raw)
        with torch.device("cuda"):
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        model.eval()
        for batch in batches:
            ids = torch.randint(0, cfg.vocab_size, (batch, args.prompt), device="cuda")

            def run(new):
                torch.cuda.synchronize()
                t = time.perf_counter()
                with torch.no_grad():
                    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                   min_new_tokens=new, do_sample=False, pad_token_id=0)
                torch.cuda.synchronize()
                return time.perf_counter() - t

            run(4)
            first = min(run(1) for _ in range(3))
            full = min(run(1 + args.new) for _ in range(2))
            res["cases"]["%s,b%d" % (name, batch)] = {"ttft_s": first, "tpot_s": (full - first) / args.new}
            print(name, batch, res["cases"]["%s,b%d" % (name, batch)], flush=True)
        del model
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
