#!/usr/bin/env python3
"""The real peak memory of one training step on the CPU, per phase, against tally's memory.train.peak.

  scripts/step_peaks_cpu/step_peaks.py [--case NAME ...] [--json PATH] [--no-explain | --timeline PHASE]

Compiles malloc_shim.c into a temporary directory, and for each case (cases.py; all by default) runs
child.py in a python3 with the shim preloaded and OMP_NUM_THREADS=1. The child counts, through the
shim, the bytes of every tensor storage (PyTorch's CPU allocator takes each from posix_memalign and
caches nothing) and of the other heap blocks of 1 KiB or more, per phase of the measured step (after
a warm-up step): forward, loss, backward (per micro-batch), optimizer.

Reported, in bytes:
  peak_tensor_bytes   the step's high-water mark less the bookkeeping, where bookkeeping = the live
                      bytes at the step's start less the tensors then live (params, buffers, optimizer
                      states, data); the aligned (tensor-only) counter gives the same number when no
                      other block of 1 KiB or more outlives a phase;
  compared            peak_tensor_bytes less data and buffers, and less what a stated convention
                      explains (convention(): torch 1.x's foreach AdamW): what memory.train.peak models;
  ratio_total, ratio_peak  compared / tally's memory.train.total, / memory.train.peak;
and per phase the live bytes at its start and its peak, the model state (params, grads, states), and
from explain.py the operator at each phase's peak with a census of what is live there.
Exit 1 when a case fails (the others still run), 2 for an unknown case."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402

ROOT = cases.ROOT
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def build_shim(workdir):
    so = os.path.join(workdir, "malloc_shim.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", os.path.join(HERE, "malloc_shim.c"), "-o", so, "-ldl"],
                   check=True)
    return so


def run_child(so, name, explain=True, timeline=None):
    env = dict(os.environ, LD_PRELOAD=so, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    args = [PYTHON, os.path.join(HERE, "child.py"), name] + ([] if explain else ["--no-explain"])
    args += ["--timeline", timeline] if timeline and explain else []
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{name}: child exited {done.returncode}:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout)


def tally_binary():
    return os.path.join(os.environ.get("TALLY_BUILD", os.path.join(ROOT, "build")), "tally")


def tally_numbers(binary, case):
    """memory.train.{total,peak,activations} and the command lines."""
    args = case.tally_args()
    shown = os.path.relpath(binary, ROOT)
    out = {"command": " ".join([shown] + args),
           "peak_command": " ".join([shown] + args + ["--get", "memory.train.peak"])}
    done = subprocess.run([binary] + args, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        out["error"] = done.stderr.strip()
        return out
    train = json.loads(done.stdout)["memory"]["train"]
    out.update(total=train.get("total"), peak=train.get("peak"), activations=train.get("activations"))
    return out


def convention(result, case):
    """Bytes a stated convention explains: torch 1.x's foreach Adam and AdamW allocate a second list
    the size of the parameters (denom = _foreach_add(sqrt, eps)) where PyTorch 2, which tally models,
    adds eps in place (torch/optim/adamw.py, _multi_tensor_adamw). Returns (bytes, why) or (0, "")."""
    major = int(result["torch"].split(".")[0])
    if major < 2 and case.impl == "foreach" and case.optimizer in ("adam", "adamw"):
        return result["params_bytes"], "torch 1.x foreach Adam(W)'s second temporary list (PyTorch 2: in place)"
    return 0, ""


def compare(result, tally, case):
    explained, why = convention(result, case)
    compared = result["peak_tensor_bytes"] - result["data_bytes"] - result["buffers_bytes"] - explained
    result["compared_bytes"] = compared
    result["convention_bytes"], result["convention"] = explained, why
    result["tally"] = tally
    for key in ("total", "peak"):
        value = tally.get(key)
        result["ratio_" + key] = compared / value if value else None
    return result


def mib(n):
    return "n/a" if n is None else f"{n / 2**20:,.1f}"


def human(n):
    """Bytes in IEC units with three significant digits, for the findings."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def ratio(r):
    return "n/a" if r is None else f"{r:.4f}"


def phase_peaks(result):
    """The highest peak of each phase kind (forward, loss, backward, optimizer) over micro-batches."""
    out = {}
    for p in result["phases"]:
        kind = p["phase"].rstrip("0123456789")
        out[kind] = max(out.get(kind, 0), p["peak_tensor_bytes"])
    return out


def print_table(results, out=sys.stdout):
    cols = ["case", "at peak", "peak bytes", "compared", "fwd", "loss", "bwd", "opt", "W", "G", "S", "saved",
            "t.act", "t.total", "/total", "t.peak", "/peak"]
    widths = [21, 10, 15, 15, 9, 9, 9, 9, 8, 8, 8, 8, 8, 9, 9, 9, 9]
    print("peak bytes: peak tensor bytes; compared: less data and buffers (exact bytes); the rest in MiB: "
          "per-phase peaks, params W, grads G, optimizer states S, saved activations at the end of the "
          "loss, tally's memory.train.activations, .total, .peak; ratios compared/tally", file=out)

    def line(cells):
        return "".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(cols), file=out)
    for r in results:
        if "error" in r:
            print(line([r["case"], "FAILED"]), file=out)
            continue
        t = r["tally"]
        pp = phase_peaks(r)
        saved = r.get("explain", {}).get("saved_after", {})
        saved = max((v for k, v in saved.items() if k.startswith("loss")), default=None)
        row = [r["case"], r["phase_at_peak"], f"{r['peak_tensor_bytes']:,}", f"{r['compared_bytes']:,}",
               mib(pp.get("forward")), mib(pp.get("loss")), mib(pp.get("backward")), mib(pp.get("optimizer")),
               mib(r["params_bytes"]), mib(r["grads_bytes"]), mib(r["optimizer_states_bytes"]), mib(saved),
               mib(t.get("activations")), mib(t.get("total")), ratio(r["ratio_total"]), mib(t.get("peak")),
               ratio(r["ratio_peak"])]
        print(line(row), file=out)


def print_findings(results, out=sys.stdout):
    """Per case and phase: the operator at the peak, its transient, and the census before it."""
    for r in results:
        if "error" in r:
            continue
        ex = r.get("explain", {})
        if "error" in ex:
            print(f"{r['case']}: explain failed: {ex['error']}", file=out)
            continue
        for ph, rec in ex.get("peaks", {}).items():
            cen = ", ".join(f"{k} {human(v)}" for k, v in rec["census"].items() if v)
            print(f"{r['case']:<21}{ph:<10} peak {human(rec['peak'])} in {rec['op']} (op #{rec['index']} of the "
                  f"phase, +{human(rec['op_transient'])} during it); live before it: {cen}", file=out)


def measure(names, explain=True, timeline=None, log=sys.stderr):
    binary = tally_binary()
    workdir = tempfile.mkdtemp(prefix="step_peaks_cpu.")
    try:
        so = build_shim(workdir)
        results = []
        for name in names:
            print(f"step_peaks_cpu: {name}", file=log, flush=True)
            try:
                result = run_child(so, name, explain, timeline)
                results.append(compare(result, tally_numbers(binary, cases.BY_NAME[name]), cases.BY_NAME[name]))
            except RuntimeError as e:
                print(f"step_peaks_cpu: error: {e}", file=log)
                results.append({"case": name, "error": str(e)})
        return results
    finally:
        shutil.rmtree(workdir)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", action="append", help="a case to run (repeatable; default all): "
                    + ", ".join(cases.BY_NAME))
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "step_peaks_cpu.json"), help="where to write")
    ap.add_argument("--no-explain", action="store_true", help="skip the operator-level account of each peak")
    ap.add_argument("--timeline", metavar="PHASE", help="also write every operator's live and peak bytes in this "
                    "phase (forward, loss, backward, optimizer; forward1 ... with accumulation) to the JSON")
    args = ap.parse_args()
    names = args.case or list(cases.BY_NAME)
    unknown = [n for n in names if n not in cases.BY_NAME]
    if unknown:
        print("step_peaks_cpu: error: unknown case " + ", ".join(unknown), file=sys.stderr)
        return 2
    results = measure(names, not args.no_explain, args.timeline)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
    print_table(results)
    print()
    print_findings(results)
    for r in results:
        if "tally" in r:
            print(f"{r['case']}: {r['tally']['peak_command']}")
    print(f"step_peaks_cpu: wrote {args.json}")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
