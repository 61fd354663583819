#include "estimate/time_estimate.h"

#include <stdexcept>

#include "config/hardware.h"
#include "util/checked_math.h"
#include "util/error.h"

namespace tally {

const std::vector<std::string>& TimeEstimate::notes() const {
  static const std::vector<std::string> kNone;
  return training ? training->notes : inference ? inference->notes : kNone;
}

namespace {

// The band's question: a decoder-only language model with attention in every block (the runs
// validated are all such: no encoder, encoder–decoder, state-space blocks or vision tower), and
// whether it routes to experts.
BandQuery BandOf(Evaluation& ev, bool training) {
  const ModelSpec& m = ev.spec();
  const TransformerSpec& t = m.transformer;
  const bool decoder = m.family == Family::kTransformer && t.vocab_size > 0 && !t.encoder && t.encoder_layers == 0 &&
                       !t.vision && !HasSsmBlocks(t);
  return {.training = training, .language_model = decoder, .moe = t.n_experts > 0};
}

}  // namespace

TimeEstimate EstimateTime(Evaluation& ev, const Settings& s, const TimeRequest& given) {
  TimeEstimate out;
  // Training from an achieved rate needs no device; everything else takes its peak or bandwidth.
  if (s.hardware.empty() && given.train.achieved && s.mode != Mode::kInfer) {
    out.training = BlameOverflowOn(ev.spec().source, [&] { return EstimateTraining(ev, s, given); });
    return out;
  }
  if (s.hardware.empty()) {
    throw InputError(
        "--hardware: time needs a device (or, for training, an --achieved FLOP/s rate); run 'tally "
        "hardware' for the catalog");
  }
  if (s.device == nullptr) throw std::logic_error("EstimateTime: settings not resolved (ResolveSettings)");
  const HardwareSpec& hw = *s.device;
  // A calibrated hardware file carries the rate measured on it: the throughput unless one is given.
  TimeRequest req = given;
  std::string calibrated;
  auto measured = hw.achieved_flops.find(ComputeDtype(s.precision));
  if (!req.train.mfu && !req.train.achieved && measured != hw.achieved_flops.end() && s.mode != Mode::kInfer) {
    req.train.achieved = measured->second;
    calibrated = "using the achieved " + std::string(Name(measured->first)) + " rate measured in " + hw.source +
                 " (achieved_flops); --mfu or --achieved overrides it";
  }
  // A calibrated file that did not measure this dtype has only a computed peak for it, which a
  // library may never reach (Debian's OpenBLAS has no bf16 GEMM at all): refuse rather than guess.
  if (!req.train.mfu && !req.train.achieved && !hw.achieved_flops.empty() && measured == hw.achieved_flops.end() &&
      s.mode != Mode::kInfer) {
    std::string dtypes;
    for (const auto& [dtype, rate] : hw.achieved_flops)
      dtypes += (dtypes.empty() ? "" : ", ") + std::string(Name(dtype));
    throw InputError("--hardware: " + hw.source + " measured " + dtypes + " but not " +
                     Name(ComputeDtype(s.precision)) + " (--precision " + PrecisionName(s.precision) +
                     "); choose a measured precision, or give --mfu "
                     "or --achieved");
  }
  BlameOverflowOn(ev.spec().source, [&] {
    if (s.mode == Mode::kInfer) {
      out.inference = EstimateInference(ev, s, req);
      if (!req.train.mfu && !req.mbu) out.validation = BandFor(hw, s, req.train.kernels, BandOf(ev, false));
      return;
    }
    out.training = EstimateTraining(ev, s, req);
    if (!calibrated.empty()) {
      out.training->throughput = Throughput::kCalibrated;
      out.training->notes.insert(out.training->notes.begin(), calibrated);
    }
    if (out.training->throughput == Throughput::kModelledStep) {
      out.validation = BandFor(hw, s, req.train.kernels, BandOf(ev, true));
    }
  });
  return out;
}

}  // namespace tally
