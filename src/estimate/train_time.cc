#include "estimate/train_time.h"

#include <algorithm>
#include <cmath>

#include "estimate/defaults.h"
#include "util/error.h"
#include "util/units.h"

namespace tally {

TrainTime TrainingTime(uint64_t model_step, uint64_t hardware_step, uint64_t tokens_per_step,
                       uint64_t devices_per_replica, uint64_t params, uint64_t active_params, double peak,
                       const TrainQuery& q, uint64_t default_gpus) {
  TrainTime t;
  t.peak = peak;
  // The flag a result out of range comes from: what the user fixed, in the order it scales it.
  const std::string flag = q.tokens ? "--tokens" : q.seconds ? "--days/--hours" : q.gpus ? "--gpus" : "--mfu";
  const auto in_range = [&](double v, const char* what, bool positive = false) {
    if (!std::isfinite(v) || (positive && v <= 0)) {
      throw InputError(flag + ": out of range: " + what + " would be " +
                       (std::isnan(v)   ? "undefined"
                        : std::isinf(v) ? "infinite"
                                        : "0"));
    }
  };
  // peak 0: no device named (an --achieved rate alone); MFU and HFU are then unknown.
  if (q.achieved && peak > 0 && *q.achieved > peak) {
    throw InputError("--achieved: " + FormatDouble(*q.achieved) + " FLOP/s is above the device's dense peak of " +
                     FormatDouble(peak) + " FLOP/s");
  }
  const double per_token_model = static_cast<double>(model_step) / static_cast<double>(tokens_per_step);
  const double per_token_hardware = static_cast<double>(hardware_step) / static_cast<double>(tokens_per_step);
  // Device-seconds per token: model FLOPs at MFU · peak (PaLM, App. B), or hardware FLOPs at the
  // achieved rate (what a profiler measures, recomputation included; Narayanan et al. 2021, §5.1).
  // Or, neither given, the modelled step: its seconds on the replica's devices over its tokens.
  const double device_seconds_per_token =
      q.achieved ? per_token_hardware / *q.achieved
      : (q.step_seconds && !q.mfu)
          ? *q.step_seconds * static_cast<double>(devices_per_replica) / static_cast<double>(tokens_per_step)
          : per_token_model / (q.mfu.value_or(kDefaultMfu) * peak);
  t.chinchilla_tokens = 20.0 * static_cast<double>(params);
  if (q.tokens && q.seconds && !q.gpus) {
    t.tokens = *q.tokens;
    t.seconds = *q.seconds;
    t.gpus = t.tokens * device_seconds_per_token / t.seconds;
    // Devices come in whole model replicas of tp x pp, at least one.
    const double replica = static_cast<double>(devices_per_replica);
    const double replicas = std::max(1.0, std::ceil(t.gpus / replica - 1e-9));
    if (!(replicas * replica < 9223372036854775808.0)) {  // 2^63: beyond it the conversion is undefined
      throw InputError("--tokens: " + FormatDouble(t.tokens) + " tokens in " + FormatDouble(t.seconds) +
                       " s need more than 2^63 devices");
    }
    t.gpus_needed = static_cast<uint64_t>(replicas) * devices_per_replica;
  } else if (q.seconds && !q.tokens) {
    t.seconds = *q.seconds;
    t.gpus = static_cast<double>(q.gpus.value_or(default_gpus));
    t.tokens = t.seconds * t.gpus / device_seconds_per_token;
  } else {
    t.tokens = q.tokens.value_or(t.chinchilla_tokens);
    t.gpus = static_cast<double>(q.gpus.value_or(default_gpus));
    t.seconds = t.tokens * device_seconds_per_token / t.gpus;
  }
  if (t.gpus_needed == 0) t.gpus_needed = static_cast<uint64_t>(std::ceil(t.gpus - 1e-9));
  // Each data-parallel replica runs a step on its own batch.
  const double replicas =
      std::max(1.0, std::floor(static_cast<double>(t.gpus_needed) / static_cast<double>(devices_per_replica)));
  t.steps = t.tokens / (static_cast<double>(tokens_per_step) * replicas);
  t.step_seconds = t.seconds / t.steps;
  t.gpu_hours = t.gpus * t.seconds / 3600;
  t.model_flops = per_token_model * t.tokens;
  t.hardware_flops = per_token_hardware * t.tokens;
  if (peak > 0) {
    t.mfu = t.model_flops / (t.seconds * t.gpus * peak);
    t.hfu = t.hardware_flops / (t.seconds * t.gpus * peak);
    t.six_nd_seconds = 6.0 * static_cast<double>(active_params) * t.tokens / (t.gpus * peak * t.mfu);
  } else {              // the same model-FLOP rate as the answer's
    t.mfu = t.hfu = 1;  // unknown: neither reported (checked in range only)
    t.six_nd_seconds = 6.0 * static_cast<double>(active_params) * t.tokens * t.seconds / t.model_flops;
  }
  in_range(t.tokens, "the tokens", true);
  in_range(t.seconds, "the training time");
  in_range(t.gpus, "the devices", true);
  in_range(t.step_seconds, "the time per step");
  in_range(t.gpu_hours, "the device-hours");
  in_range(t.hardware_flops, "the FLOPs in all");
  in_range(t.mfu, "the MFU");
  in_range(t.hfu, "the HFU");
  in_range(t.six_nd_seconds, "the 6·N·D time");
  // Recomputation adds hardware FLOPs: an MFU near 1 can ask the device to run past its peak.
  if (t.hfu > 1 + 1e-9) {
    throw InputError("--mfu: " + FormatDouble(q.mfu.value_or(kDefaultMfu)) + " with recomputation needs an HFU of " +
                     FormatFixed(t.hfu, 3) + ", above 1 (the device's peak)");
  }
  return t;
}

}  // namespace tally
