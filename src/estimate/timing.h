// Time: training time and compute budgets from FLOPs and a throughput (MFU of a dense peak, or an
// achieved rate); inference latency by a per-op roofline (Williams et al. 2009).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/hardware.h"
#include "config/model_spec.h"
#include "config/settings.h"
#include "graph/layer_graph.h"
#include "util/compute_dtype.h"

namespace tally {

// Which two of tokens, time and devices the user fixed; the third is solved for.
struct TrainQuery {
  std::optional<double> tokens;
  std::optional<double> seconds;
  std::optional<uint64_t> gpus;    // given explicitly
  std::optional<double> mfu;       // model FLOPs utilization of the dense peak (PaLM, App. B)
  std::optional<double> achieved;  // hardware FLOP/s per device actually reached (recomputation included)
  // The modelled seconds of one replica's optimizer step (estimate/step_time.h): used when neither
  // mfu nor achieved is given.
  std::optional<double> step_seconds;
  uint64_t gpus_per_node = 8;
  uint64_t vp = 1;              // virtual pipeline stages (interleaved 1F1B)
  std::optional<double> price;  // per device-hour
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

// How many ways tensor parallelism divides a node's compute (tp, or less past K/V heads), and
// whether a linear is row-parallel (its output all-reduced over the tensor-parallel group).
double TpDivisor(const Layer& l, uint64_t tp);

// Elements of a tensor of `shape`, and bytes of one element of `d`, as doubles for the time models.
inline double ShapeElements(const std::vector<uint64_t>& shape) {
  double n = 1;
  for (uint64_t d : shape) n *= static_cast<double>(d);
  return n;
}
inline double BytesPerElement(DType d) { return static_cast<double>(BitsPer(d)) / 8; }
bool RowParallel(const Layer& l);

// The peak dtype a precision policy computes in: bf16, fp16, fp32 (no TF32: PyTorch's matmul
// default) or fp8.
GemmDType ComputeDtype(Precision p);

// One node of the graph in a roofline: a node of a repeated block stands for all its copies.
struct NodeRoofline {
  std::string path;
  uint64_t repeat = 1;
  double flops = 0, bytes = 0;
  double compute_seconds = 0, memory_seconds = 0;
};

struct Roofline {
  std::vector<NodeRoofline> nodes;  // per distinct node, in graph order
  double seconds = 0;               // sum over ops of max(compute, memory), plus tensor-parallel all-reduces
  double compute_seconds = 0;       // the sum of the ops' compute times
  double memory_seconds = 0;        // the sum of the ops' memory times
  double allreduce_seconds = 0;
  double gemm_compute_seconds = 0;  // the linear layers' share: weight GEMMs
  double gemm_memory_seconds = 0;
  double flops = 0;
  double bytes = 0;
};

struct RooflineRates {
  double peak = 0;  // FLOP/s
  double mfu = 1;
  double bandwidth = 0;  // bytes/s
  double mbu = 1;        // memory-bandwidth utilization
  double interconnect = 0;
  double linear_peak = 0;  // the block matrices' GEMMs when they run in another dtype (W8A8); 0: peak
};

// One forward pass of `graph` on one device: each node takes max(FLOPs / (peak · mfu),
// bytes / (bandwidth · mbu)), where bytes are its weights, its inputs and outputs and, in attention,
// the K and V it reads. Only the last position's logits are computed (what generation needs).
Roofline ForwardRoofline(const LayerGraph& graph, const ModelSpec& spec, const Settings& settings,
                         const RooflineRates& rates);

}  // namespace tally
