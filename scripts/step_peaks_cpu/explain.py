"""What is live at each phase's peak: two more training steps under a TorchDispatchMode that reads the
shim's tensor counter (the aligned blocks) around every ATen operator.

Pass 1 records, per operator, the live tensor bytes before it and the high-water mark during it, and
keeps each phase's operator with the highest mark. Pass 2 replays the same step (the allocations are
deterministic) and, right before each of those operators, sorts the live tensor bytes by storage into
categories, each storage counted once, in this order:
  params, buffers, optimizer_states, grads (p.grad set so far), data (inputs and targets),
  outputs (the logits and the loss the step holds), saved (tensors autograd saved for backward that are
  still held: weak references taken by a saved_tensors_hooks pack hook), op_inputs (the operator's other
  tensor arguments), other (the rest of the live tensor bytes: autograd's pending gradients and their
  sums, temporaries of the step and of the optimizer, checkpoint's recomputed tensors)
and adds the operator's own part: op_transient = peak during the operator - live before it."""
import contextlib
import weakref


@contextlib.contextmanager
def nothing():
    yield


def _storage(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr(), s.nbytes()


def _tensors(torch, x):
    if torch.is_tensor(x):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(torch, y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _tensors(torch, y)


class Tracer:
    """The dispatch mode's state: the current phase, the operator count within it, and the records."""

    def __init__(self, torch, step, shim, non_tensor, census_at=None, timeline=None):
        self.torch, self.step, self.shim, self.non_tensor = torch, step, shim, non_tensor
        self.timeline_phase, self.timeline = timeline, []  # every operator's record in that phase
        self.phase, self.index = None, 0
        self.best = {}       # phase -> record of the operator with the highest peak
        self.census_at = census_at or {}  # phase -> operator index to take a census before
        self.census = {}
        self.saved = []      # (weakref, storage address, bytes) of every tensor packed for backward
        self.saved_after = {}  # phase -> saved_bytes() at its end

    def on_phase(self, name):
        tracer = self

        @contextlib.contextmanager
        def phase():
            tracer.phase, tracer.index = name, 0
            yield
            tracer.phase = None
            tracer.saved_after[name] = tracer.saved_bytes()
        return phase()

    def saved_bytes(self):
        """Bytes of the saved tensors still held, each storage once, less weights, buffers and data."""
        step = self.step
        held = {_storage(t)[0] for t in list(step.model.parameters()) + list(step.model.buffers())
                + step.data_tensors()}
        alive = {}
        for ref, ptr, n in self.saved:
            if ref() is not None and ptr not in held:
                alive[ptr] = n
        return sum(alive.values())

    def pack(self, t):
        ptr, n = _storage(t)
        self.saved.append((weakref.ref(t), ptr, n))
        return t

    def operator(self, func, args, kwargs):
        live = self.shim.stats(True)[0]
        if self.phase is not None and self.census_at.get(self.phase) == self.index:
            self.census[self.phase] = self.take_census(live, list(_tensors(self.torch, (args, kwargs))))
        self.shim.reset_peak()
        out = func(*args, **kwargs)
        after, peak = self.shim.stats(True)
        if self.phase is not None:
            rec = {"op": func.overloadpacket.__name__, "index": self.index, "live_before": live - self.non_tensor,
                   "peak": peak - self.non_tensor, "op_transient": peak - live, "op_outputs": after - live}
            if self.phase not in self.best or rec["peak"] > self.best[self.phase]["peak"]:
                self.best[self.phase] = rec
            if self.phase == self.timeline_phase:
                self.timeline.append([rec["op"], rec["live_before"], rec["peak"], after - self.non_tensor])
            self.index += 1
        return out

    def take_census(self, live, op_inputs):
        torch, step = self.torch, self.step
        seen, cats = set(), {}

        def add(name, tensors):
            cats[name] = 0
            for t in tensors:
                ptr, n = _storage(t)
                if ptr and ptr not in seen:
                    seen.add(ptr)
                    cats[name] += n
        params = list(step.model.parameters())
        add("params", params)
        add("buffers", step.model.buffers())
        add("optimizer_states", step.state_tensors())
        add("grads", [p.grad for p in params if p.grad is not None])
        add("data", step.data_tensors())
        add("outputs", [t for t in step.held.values() if torch.is_tensor(t)])
        add("saved", [t for t in (ref() for ref, _, _ in self.saved) if t is not None])
        add("op_inputs", op_inputs)
        cats["other"] = live - self.non_tensor - sum(cats.values())
        return cats


def trace(torch, step, shim, non_tensor, census_at=None, timeline=None):
    from torch.utils._python_dispatch import TorchDispatchMode
    tracer = Tracer(torch, step, shim, non_tensor, census_at, timeline)

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = tracer.operator(func, args, kwargs or {})
            if func.overloadpacket is torch.ops.aten.detach and not torch.is_tensor(out):
                # 1.13: detaching a saved 0-dim wrapped number (x / math.sqrt(d)) to unpack it returns
                # a Python float here; give autograd a tensor back.
                out = torch.tensor(out, dtype=args[0].dtype)
            return out

    with torch.autograd.graph.saved_tensors_hooks(tracer.pack, lambda t: t), Mode():
        step.run(tracer.on_phase)
    return tracer


def explain(torch, step, shim, result, timeline=None):
    """peaks: per phase, the operator at the peak, its transient and the census of what is live before
    it; saved_after: per phase, the saved bytes still held at its end (saved_bytes); timeline (for the
    phase named so): [operator, live before, peak during, live after] of each of its operators."""
    non_tensor = result["aligned_non_tensor_bytes"]
    try:
        first = trace(torch, step, shim, non_tensor, timeline=timeline)
        second = trace(torch, step, shim, non_tensor, {ph: rec["index"] for ph, rec in first.best.items()})
    except Exception as e:  # noqa: BLE001 - a report, not a check: say why and go on
        return {"error": f"{type(e).__name__}: {e}"}
    peaks = {}
    for ph, rec in first.best.items():
        cen = second.census.get(ph, {})
        peaks[ph] = dict(rec, census=cen)
    out = {"peaks": peaks, "saved_after": first.saved_after}
    if timeline:
        out["timeline"] = first.timeline
    return out
