// The per-op roofline of a forward pass (Williams et al. 2009), inference's latency model, and the
// per-node helpers the time models share: tensor-parallel shares, element sizes, the compute dtype.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/hardware.h"
#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/kernel_costs.h"
#include "graph/layer_graph.h"
#include "util/compute_dtype.h"

namespace tally {

// How many ways tensor parallelism divides a node's compute (tp, or less past K/V heads), and
// whether a linear is row-parallel (its output all-reduced over the tensor-parallel group).
double TpDivisor(const Layer& l, uint64_t tp);

// How many ways tensor parallelism divides a memory-bound (GEMM-less) node's elements on a device:
// a node on split dimensions (Layer::tp_split) by tp, capped at its K/V heads, with or without
// sequence parallelism; one holding split parameters (the vocabulary-parallel embedding) as they
// split; the replicated rest only under sequence parallelism (`sp`), which splits it by tp
// (Korthikanti et al. 2022, §4.2.2).
double ElementwiseTpShards(const Layer& l, uint64_t tp, bool sp);

// Elements of a tensor of `shape`, and bytes of one element of `d`, as doubles for the time models.
inline double ShapeElements(const std::vector<uint64_t>& shape) {
  double n = 1;
  for (uint64_t d : shape) n *= static_cast<double>(d);
  return n;
}
// A memory-bound op's elements: its own count where its output shape does not give it (Layer::op_elements).
inline double OpElements(const Layer& l) {
  return l.op_elements > 0 ? static_cast<double>(l.op_elements) : ShapeElements(l.shape);
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
  double floor_seconds = 0;         // the kernels' fixed time (RooflineRates' floors), inside `seconds`
  double gemm_compute_seconds = 0;  // the linear layers' share: weight GEMMs
  double gemm_memory_seconds = 0;
  double flops = 0;
  double bytes = 0;
  // The board's power limit (estimate/power_limit.h), where RooflineRates' power_limited: the
  // compute-bound kernels' share of `seconds`, how far the shaped GEMMs have fallen toward their
  // power-limited rates, and the seconds that adds.
  double tensor_duty = 0, power_weight = 0, power_limit_seconds = 0;
};

struct RooflineRates {
  double peak = 0;  // FLOP/s
  double mfu = 1;
  double bandwidth = 0;     // bytes/s
  double mbu = 1;           // memory-bandwidth utilization
  double interconnect = 0;  // bytes/s NCCL moves per direction in the node (HardwareSpec::IntraNodeCollectiveBandwidth)
  NvlsArch nvls = NvlsArch::kNone;  // HardwareSpec::nvls: the all-reduce may run in the NVSwitches
  double linear_peak = 0;           // the block matrices' GEMMs when they run in another dtype (W8A8); 0: peak
  // Set when `mfu` is the device's best-shape GEMM efficiency for this dtype (the catalog's
  // gemm_efficiency, no --mfu): each weight GEMM then runs at its shape's share of it
  // (estimate/gemm_shape.h), the linear_peak's at linear_mfu.
  std::optional<GemmDType> shaped;
  double linear_mfu = 0;
  KernelFloors floors;  // a GPU kernel's fixed time, by kind; zero: none
  // The GEMM kernel of weight-only quantized weights (W8A16, W4A16): its stored bytes stream at
  // mbu x dequant.bandwidth, its FLOPs at dequant.compute x peak where that binds. Default: as bf16.
  DequantKernelCost dequant;
  // The device's shaped GEMMs slow at its board's power limit as they fill the pass (a GPU the power
  // sweeps measured: estimate/power_limit.h).
  bool power_limited = false;
};

// One forward pass of `graph` on one device: each node takes max(FLOPs / (peak · mfu),
// bytes / (bandwidth · mbu) + its kernel's floor), where bytes are its weights, its inputs and outputs and, in
// attention, the K and V it reads. Only the last position's logits are computed (what generation needs).
// A GEMM of weight-only quantized weights takes its stored bytes at rates.dequant's share of the
// bandwidth and, past the tokens that hide it, its FLOPs at rates.dequant's compute rate. Throws
// InputError for --dequant-kernel tinygemm on weights of other than 4 bits (measured at 4 only).
Roofline ForwardRoofline(const LayerGraph& graph, const ModelSpec& spec, const Settings& settings,
                         const RooflineRates& rates);

}  // namespace tally
