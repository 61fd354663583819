// A training budget from FLOPs and one throughput: two of tokens, wall-clock time and devices fix
// the third, at an MFU of the dense peak, an achieved FLOP/s, or a modelled step's seconds
// (estimate/step_model.h).
#pragma once

#include <cstdint>
#include <optional>

#include "config/settings.h"

namespace tally {

// Which two of tokens, time and devices the user fixed; the third is solved for.
struct TrainQuery {
  std::optional<double> tokens;
  std::optional<double> seconds;
  std::optional<uint64_t> gpus;    // given explicitly
  std::optional<double> mfu;       // model FLOPs utilization of the dense peak (PaLM, App. B)
  std::optional<double> achieved;  // hardware FLOP/s per device actually reached (recomputation included)
  // The modelled seconds of one replica's optimizer step (estimate/step_model.h): used when neither
  // mfu nor achieved is given.
  std::optional<double> step_seconds;
  // --gpus-per-node; 0 when not given: the device's own (HardwareSpec::gpus_per_node), else 8.
  uint64_t gpus_per_node = 0;
  uint64_t vp = 1;  // virtual pipeline stages (interleaved 1F1B)
  PipelineSchedule schedule = PipelineSchedule::k1f1b;
  Kernels kernels = Kernels::kEager;               // what the step's non-GEMM ops run as (estimate/kernel_costs.h)
  bool tp_overlap = false;                         // --tp-overlap (estimate/step_model.h)
  bool dp_overlap = true;                          // not --no-dp-overlap (estimate/step_model.h)
  bool ep_overlap = false;                         // --ep-overlap (estimate/step_model.h)
  EpDispatch ep_dispatch = EpDispatch::kAllToAll;  // --ep-dispatch (estimate/expert_parallel.h)
  DpBucket dp_bucket = DpBucket::kDdp;             // --dp-bucket (estimate/step_model.h)
  uint64_t dp_bucket_params = 0;                   // --dp-bucket N
  bool param_gather_overlap = false;               // --overlap-param-gather (estimate/step_model.h)
  double moe_imbalance = 1;                        // --moe-imbalance (estimate/step_model.h)
  Fp8Recipe fp8_recipe = Fp8Recipe::kTensorwise;   // --fp8-recipe (estimate/kernel_costs.h)
  bool power_limit = true;                         // not --no-power-limit (estimate/power_limit.h)
  std::optional<double> price;                     // per device-hour
};

struct TrainTime {
  double peak = 0;  // dense FLOP/s per device for the policy's compute dtype
  double mfu = 0;   // model FLOPs / (time · devices · peak)
  double hfu = 0;   // hardware FLOPs (recomputation included) / (time · devices · peak)
  double tokens = 0;
  double seconds = 0;
  double gpus = 0;  // fractional when solved for; rounded up in `gpus_needed`
  uint64_t gpus_needed = 0;
  double steps = 0;
  double step_seconds = 0;
  double gpu_hours = 0;
  double model_flops = 0;  // for all tokens
  double hardware_flops = 0;
  double chinchilla_tokens = 0;  // 20 tokens per parameter (Hoffmann et al. 2022)
  double six_nd_seconds = 0;     // the 6·N·D rule with N = the active parameters, at the same throughput
};

// `model_step` and `hardware_step` are the FLOPs of one replica's optimizer step of
// `tokens_per_step` tokens; a replica spans `devices_per_replica` devices (tp x pp).
// `params` sets the Chinchilla-optimal tokens, `active_params` (what a token uses; all of them
// for a dense model) the 6·N·D time.
TrainTime TrainingTime(uint64_t model_step, uint64_t hardware_step, uint64_t tokens_per_step,
                       uint64_t devices_per_replica, uint64_t params, uint64_t active_params, double peak,
                       const TrainQuery& query, uint64_t default_gpus);

}  // namespace tally
