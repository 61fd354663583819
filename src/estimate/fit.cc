#include "estimate/fit.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "config/hardware.h"
#include "config/resolve.h"
#include "estimate/memory.h"
#include "estimate/step_timeline.h"
#include "util/checked_math.h"
#include "util/error.h"
#include "util/units.h"

namespace tally {
namespace {

constexpr uint64_t kMaxSearch = uint64_t{1} << 40;

// The settings with the searched quantity set to `v`.
Settings With(Settings s, Solve solve, uint64_t v) {
  switch (solve) {
    case Solve::kBatch:
      s.batch = CheckedMul(v, s.grad_accum(), "the batch");  // the same number of micro-batches
      s.micro_batch = v;
      break;
    case Solve::kSeq:
      s.seq = v;
      break;
    case Solve::kGpus: {
      // The expert grid: ep · etp divides tp · cp · dp (estimate/expert_parallel.h), so dp steps by
      // ep · etp / gcd(ep · etp, tp · cp).
      const uint64_t group = CheckedMul(s.ep, s.expert_tp(), "--ep x --etp");
      const uint64_t step = group / std::gcd(group, CheckedMul(s.tp, s.cp, "--tp x --cp"));
      v = CheckedMul(CeilDiv(v, step), step, "the device count");
      s.gpus = CheckedProduct({v, s.tp, s.pp, s.cp}, "the device count");
      break;
    }
    case Solve::kRecompute:  // 0: no recomputation
      s.recompute = v == 0 ? Recompute::kNone : Recompute::kFull;
      s.recompute_layers = v == 0 ? std::nullopt : std::optional<uint64_t>(v);
      break;
  }
  return s;
}

uint64_t UpperBound(const ModelSpec& spec, Solve solve) {
  if (solve == Solve::kSeq && spec.family == Family::kTransformer &&
      spec.transformer.position == PositionKind::kLearned) {
    return spec.transformer.context_length;
  }
  return kMaxSearch;
}

}  // namespace

uint64_t DeviceMemory(Evaluation& ev, const Settings& s) {
  const MemoryModel& model = ev.Summary(s)->memory;
  if (s.mode == Mode::kInfer) {
    const uint64_t total = InferenceMemory(ev.spec(), s, model, InferenceBatch(s)).total;
    return CheckedAdd(total, InferenceOverheads(s, total).Total(), "inference memory");
  }
  return TrainingStepMemory(model, s, TrainingMemory(s, model), false).device;
}

FitResult Fit(Evaluation& ev, const Settings& base, Solve solve, uint64_t limit) {
  FitResult r;
  uint64_t bytes = 0;
  // --cp: a sequence is searched in whole load-balanced chunks of 2·cp tokens (estimate/context_parallel.h).
  const uint64_t unit = solve == Solve::kSeq && base.cp > 1 ? 2 * base.cp : 1;
  const uint64_t cap = UpperBound(ev.spec(), solve) / unit;
  // Whether `v` fits. A figure past 2^64 - 1 (the bytes, the batch, the device count) certainly
  // does not: CountOverflow is that outcome. Any other InputError is a setting wrong at every size
  // (a refused training ledger, --solve seq on a sequential model) and goes to the caller as the
  // error it is. Batch and devices reuse the evaluation's summary; each new sequence length builds
  // one graph of the distinct blocks (the search stops at the learned positions: UpperBound).
  auto at = [&](uint64_t v) {
    r.value = v * unit;
    try {
      r.settings = With(base, solve, v * unit);
      bytes = DeviceMemory(ev, r.settings);
      return bytes <= limit;
    } catch (const CountOverflow&) {
      return false;
    }
  };
  if (solve == Solve::kRecompute) {
    // Fewest recomputed blocks a stage (0: none needed). Each one more keeps its input instead of all
    // it saves, so memory per device falls as they grow, up to the stage's last block: recomputing
    // that one too keeps its input beside the block rebuilt at once, one input more. So search the
    // others, then try every block.
    if (base.mode == Mode::kInfer) {
      throw InputError("--solve recompute: recomputation is training's; drop --mode infer");
    }
    if (base.recompute != Recompute::kNone || base.recompute_layers) {
      throw InputError("--solve recompute: it chooses --recompute and --recompute-layers itself; drop them");
    }
    const uint64_t layers = ev.Summary(base)->memory.n_layers;
    if (ev.spec().family != Family::kTransformer || layers == 0) {
      throw InputError("--solve recompute: '" + ev.spec().name + "' has no transformer blocks to recompute");
    }
    const uint64_t most = StageFirstBlock(1, layers, base.pp);
    if (!at(0)) {
      if (most > 1 && at(most - 1)) {
        uint64_t lo = 0, hi = most - 1;  // lo does not fit, hi does
        while (hi - lo > 1) {
          const uint64_t mid = lo + (hi - lo) / 2;
          (at(mid) ? hi : lo) = mid;
        }
        at(hi);
      } else if (!at(most)) {
        if (most > 1) at(most - 1);  // the least any number of blocks needs: report that
        r.bytes = bytes;
        return r;
      }
    }
  } else if (solve == Solve::kGpus) {
    // Fewest data-parallel ranks: memory per device only falls as they grow.
    uint64_t hi = 1;
    while (hi < kMaxSearch && !at(hi)) hi *= 2;
    if (!at(hi)) {  // not even 2^40 ranks: report what one rank would need
      at(1);
      r.bytes = bytes;
      return r;
    }
    uint64_t lo = hi / 2;  // does not fit (or 0)
    while (hi - lo > 1) {
      uint64_t mid = lo + (hi - lo) / 2;
      (at(mid) ? hi : lo) = mid;
    }
    at(hi);
  } else {
    // Largest value: memory only grows with batch and sequence.
    if (!at(1)) {
      r.bytes = bytes;
      return r;
    }
    uint64_t lo = 1, hi = 2;
    while (hi <= cap && at(hi)) {
      lo = hi;
      hi *= 2;
    }
    hi = std::min(hi, cap + 1);  // first value known not to fit (or past the cap)
    while (hi - lo > 1) {
      uint64_t mid = lo + (hi - lo) / 2;
      (at(mid) ? lo : hi) = mid;
    }
    at(lo);
    if (lo == cap && cap == kMaxSearch) {
      // 2^40 would be printed as if it were the answer (issue 28): no search answers this limit.
      throw InputError("--memory: " + FormatBytes(limit, UnitSystem::kIec) + " holds more than 2^40 (" +
                       FormatCount(kMaxSearch) + ") " + (solve == Solve::kSeq ? "tokens" : "sequences") + " of '" +
                       ev.spec().name + "' a device, past fit's search; give a device's memory");
    }
    if (lo == cap) {  // it fits at the model's positions: longer would too, as far as memory goes
      r.note = "the sequence stops at the model's " + std::to_string(cap * unit) +
               " learned positions; the memory limit allows more";
    }
  }
  r.fits = true;
  r.bytes = bytes;
  return r;
}

FitEstimate EstimateFit(Evaluation& ev, Settings base, Solve solve, std::optional<uint64_t> memory) {
  const ModelSpec& spec = ev.spec();
  const HardwareSpec* hw = base.device.get();
  if (base.mode == Mode::kBoth) base.mode = Mode::kTrain;  // fit one ledger: training unless told
  const bool serving = base.mode == Mode::kInfer && spec.family == Family::kTransformer && !spec.transformer.encoder;
  const uint64_t device_memory = memory ? *memory : hw->memory_bytes;
  const std::string device_name = memory ? "" : hw->name;
  if (serving) base = WithServingDefaults(base, device_memory, device_name);
  FitEstimate out;
  out.solve = solve;
  // A named device gives its usable memory (less --reserve) unless --memory says otherwise; a
  // server claims its --gpu-memory-utilization of either.
  out.limit = memory ? ClaimedMemory(*memory, base) : UsableMemory(*hw, base);
  out.result = Fit(ev, base, solve, out.limit);
  out.seq = ev.Summary(out.result.settings)->seq;
  if (serving && out.result.fits) {
    out.serving = EstimateServing(ev, out.result.settings, out.limit, VllmMaxNumSeqs(device_memory, device_name), hw);
  }
  return out;
}

}  // namespace tally
