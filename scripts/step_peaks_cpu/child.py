"""Measures one training step of one case, in a python3 that has malloc_shim.so preloaded:
  LD_PRELOAD=malloc_shim.so OMP_NUM_THREADS=1 python3 child.py CASE [--no-explain | --timeline PHASE]
prints one JSON object.

Steps: a warm-up step (it creates the optimizer states), then the measured step, whose phases
(forward, loss, backward, per micro-batch; then optimizer) each start with shim_reset_peak() and end
with shim_stats(). Two more steps under a dispatch mode (explain.py) find the operator at each phase's
peak and what is live there; they do not change the measured numbers."""
import ctypes
import gc
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
import explain  # noqa: E402


class Shim:
    def __init__(self):
        lib = ctypes.CDLL(None)
        self.reset_peak = lib.shim_reset_peak
        self._stats, self._aligned, self.dropped = lib.shim_stats, lib.shim_stats_aligned, lib.shim_dropped
        self.dropped.restype = ctypes.c_long

    def stats(self, aligned=False):
        live, peak = ctypes.c_long(), ctypes.c_long()
        (self._aligned if aligned else self._stats)(ctypes.byref(live), ctypes.byref(peak))
        return live.value, peak.value


def storages(tensors):
    """{storage address: bytes} of the tensors (a storage shared by several counted once)."""
    out = {}
    for t in tensors:
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        if s.data_ptr():
            out[s.data_ptr()] = s.nbytes()
    return out


class Step:
    """One case's model, optimizer, data and loss; run() is one optimizer step, its phases reported to
    on_phase(name) -> context manager."""

    def __init__(self, torch, case):
        self.torch, self.case = torch, case
        torch.manual_seed(0)
        self.model, sample = case.build(torch)
        self.model.train()
        self.optimizer = case.make_optimizer(torch, self.model.parameters())
        micro = case.batch // case.accum
        self.data = [self.sample(sample, micro) for _ in range(case.accum)]
        self.held = {}  # the step's own references (outputs, loss), for explain.py

    def sample(self, sample, micro):
        torch = self.torch
        if sample[0] == "tokens":  # token ids; a target class per token
            return torch.randint(0, sample[1], (micro, sample[2])), torch.randint(0, sample[1], (micro * sample[2],))
        x = torch.randn((micro,) + tuple(sample))
        if self.case.loss == "mse":
            return x, torch.zeros((micro,) + tuple(sample))  # regression towards zeros (mlp3: out = in)
        return x, torch.randint(0, 1000, (micro,))

    def loss(self, out, target):
        F = self.torch.nn.functional
        return F.mse_loss(out, target) if self.case.loss == "mse" else F.cross_entropy(out, target)

    def run(self, on_phase):
        """A training step as users write it: out and loss stay referenced until the step returns."""
        accum = self.case.accum
        for i, (x, target) in enumerate(self.data):
            suffix = "" if accum == 1 else str(i + 1)
            with on_phase("forward" + suffix):
                out = self.model(x)
            self.held["out"] = out
            with on_phase("loss" + suffix):
                loss = self.loss(out, target)
                if accum > 1:
                    loss = loss / accum
            self.held["loss"] = loss
            with on_phase("backward" + suffix):
                loss.backward()
        with on_phase("optimizer"):
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.held.clear()

    def state_tensors(self):
        return [t for s in self.optimizer.state.values() for t in s.values() if self.torch.is_tensor(t)]

    def data_tensors(self):
        return [t for pair in self.data for t in pair]


class PhaseMeter:
    """on_phase for Step.run: live bytes at each phase's start and the peak within it (both counters)."""

    def __init__(self, shim):
        self.shim, self.phases = shim, []

    def __call__(self, name):
        meter = self

        class Phase:
            def __enter__(self):
                meter.shim.reset_peak()
                self.start, self.start_aligned = meter.shim.stats()[0], meter.shim.stats(True)[0]

            def __exit__(self, *exc):
                live, peak = meter.shim.stats()
                live_a, peak_a = meter.shim.stats(True)
                meter.phases.append({"phase": name, "start": self.start, "peak": peak, "end": live,
                                     "start_aligned": self.start_aligned, "peak_aligned": peak_a,
                                     "end_aligned": live_a})
        return Phase()


def measure(torch, case, shim):
    step = Step(torch, case)
    step.run(lambda name: explain.nothing())  # warm-up: creates the optimizer states
    gc.collect()
    params = storages(step.model.parameters())
    buffers = {p: n for p, n in storages(step.model.buffers()).items() if p not in params}
    states = storages(step.state_tensors())
    data = storages(step.data_tensors())
    state_bytes = {"params": sum(params.values()), "buffers": sum(buffers.values()),
                   "optimizer_states": sum(states.values()), "data": sum(data.values())}
    tensors_at_start = sum(state_bytes.values())
    live0, live0_aligned = shim.stats()[0], shim.stats(True)[0]
    meter = PhaseMeter(shim)
    step.run(meter)
    grads = sum(p.numel() * p.element_size() for p in step.model.parameters())
    peak = max(p["peak"] for p in meter.phases)
    peak_aligned = max(p["peak_aligned"] for p in meter.phases)
    bookkeeping, bookkeeping_aligned = live0 - tensors_at_start, live0_aligned - tensors_at_start
    at_peak = next(p["phase"] for p in meter.phases if p["peak"] == peak)
    return step, {
        "case": case.name, "torch": torch.__version__, "threads": torch.get_num_threads(),
        "phase_at_peak": at_peak,
        "peak_tensor_bytes": peak - bookkeeping,
        "peak_aligned_tensor_bytes": peak_aligned - bookkeeping_aligned,
        "bookkeeping_bytes": bookkeeping, "aligned_non_tensor_bytes": bookkeeping_aligned,
        "live_at_step_start": live0, **{k + "_bytes": v for k, v in state_bytes.items()},
        "grads_bytes": grads,
        "phases": [dict(p, peak_tensor_bytes=p["peak"] - bookkeeping, start_tensor_bytes=p["start"] - bookkeeping)
                   for p in meter.phases],
        "shim_dropped": shim.dropped(),
    }


def main():
    import torch
    torch.set_num_threads(1)
    case = cases.BY_NAME[sys.argv[1]]
    shim = Shim()
    step, result = measure(torch, case, shim)
    if "--no-explain" not in sys.argv:
        timeline = sys.argv[sys.argv.index("--timeline") + 1] if "--timeline" in sys.argv else None
        result["explain"] = explain.explain(torch, step, shim, result, timeline)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
