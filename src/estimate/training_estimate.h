// Training time on a device: which throughput applies (the step modelled from its parts, an MFU,
// or an achieved rate), the FLOPs the kernels execute, the budget it gives and the memory fit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "estimate/evaluation.h"
#include "estimate/step_model.h"
#include "estimate/time_request.h"
#include "estimate/train_time.h"
#include "util/compute_dtype.h"

namespace tally {

// Mean power drawn while training as a fraction of the board's rated power: an assumption (GPUs
// under dense GEMM load run near, not at, their limit; Patterson et al. 2021 report measured mean
// draws below the rated TDP), stated in the report.
inline constexpr double kPowerUtilization = 0.8;

// Where the training time's throughput came from.
enum class Throughput {
  kModelledStep,  // the catalog's gemm_efficiency for the compute dtype: the step from its parts
  kMfu,           // --mfu, or kDefaultMfu where the device lists no gemm_efficiency
  kAchieved,      // --achieved
  kCalibrated,    // the achieved_flops a calibrated hardware file measured for the compute dtype
};

// Whether the memory a run needs per device fits what the device leaves after --reserve.
struct TimeFit {
  uint64_t needed = 0;
  uint64_t limit = 0;
  bool fits = false;
};

// The fit of `needed` bytes per device on `hw` at `settings`; when it does not fit, a note in
// `notes` says so, calling the run `what` ("training", "inference").
TimeFit CheckFit(uint64_t needed, const HardwareSpec& hw, const Settings& settings, const char* what,
                 std::vector<std::string>& notes);

// The modelled step (estimate/step_model.h) and the figures its formulas are stated with.
struct ModelledStep {
  StepTime time;
  uint64_t gpus_per_node = 8;
  // --ep: all-to-alls per MoE block and micro-batch, whether etp x ep stays inside a node, and the
  // ranks the routed experts' and the other gradients reduce over.
  double ep_all_to_alls = 0;
  bool ep_intra_node = false;
  EpDispatch ep_dispatch = EpDispatch::kAllToAll;
  DpBucket dp_bucket = DpBucket::kDdp;  // --dp-bucket
  double moe_imbalance = 1;             // --moe-imbalance, 1 without --ep
  uint64_t expert_dp = 0, gradient_ranks = 0;
  // --offload: bytes over the host link per step each way, and host memory per node.
  double offload_down_bytes = 0, offload_up_bytes = 0;
  double host_bandwidth = 0;
  uint64_t host_bytes = 0;        // per device (memory.train.host.total)
  uint64_t devices_per_node = 0;  // --gpus-per-node, at most --gpus
  uint64_t host_bytes_per_node = 0;
  double cp_hop_bytes = 0;  // --cp: one K,V chunk of the ring
};

struct TrainingEstimate {
  const Settings* settings = nullptr;  // the settings it was computed at: must outlive it
  std::string hardware;                // the device; "" when only an --achieved rate was given
  std::string source;                  // the hardware file the device's figures come from
  GemmDType dtype = GemmDType::kBf16;  // the compute dtype of the precision policy
  double peak = 0;                     // dense FLOP/s per device; 0 without a device
  Throughput throughput = Throughput::kMfu;
  std::optional<double> achieved;  // FLOP/s per device, given or calibrated
  // Decoders' kernels skip attention's masked half (causal flash attention): the hardware FLOPs do.
  bool causal_kernels = false;
  TrainTime time;
  std::optional<ModelledStep> step;  // when the throughput is kModelledStep
  std::optional<double> energy_kwh;  // a device with a rated board power
  std::optional<double> cost;        // --price
  std::optional<TimeFit> fit;        // with a device, at the devices the answer uses
  std::vector<std::string> notes;

  bool device() const { return !hardware.empty(); }
};

// Training time at `settings` (resolved: its device read) as `request` asks; without a device,
// request.train.achieved must give the rate. Throws InputError for what the device or flags cannot
// give. Reads `settings` by reference: it must outlive the result.
TrainingEstimate EstimateTraining(Evaluation& evaluation, const Settings& settings, const TimeRequest& request);

}  // namespace tally
