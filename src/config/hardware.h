// The hardware catalog (configs/hardware/*.yaml, compiled in) and users' own files of the same
// schema: dense peak FLOP/s per dtype, memory capacity and bandwidth, interconnect bandwidth.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/compute_dtype.h"

namespace tally {

// NCCL's NVLS algorithm and the constants it runs it with on each architecture: none, Hopper's or
// Blackwell's (src/graph/tuning.cc nvlsEfficiency, src/graph/search.cc channel speeds).
enum class NvlsArch { kNone, kHopper, kBlackwell };
// "hopper", "blackwell", or "" for kNone: as the catalog's `nvls:` spells it.
const char* NvlsName(NvlsArch arch);

struct HardwareSpec {
  std::string name;
  std::vector<std::string> aliases;  // other names it answers to (lower case): h100 for h100-sxm
  std::string description;
  std::string kind;      // gpu | tpu | cpu
  std::string source;    // the file it came from
  bool catalog = false;  // the catalog's own entry, resolved by name (not a file given by path)
  uint64_t memory_bytes = 0;
  double memory_bandwidth = 0;        // bytes/s
  double interconnect_bandwidth = 0;  // bytes/s per direction per device
  // Collectives (estimate/step_model.h): bytes/s per direction per device inside a node (NVLink,
  // xGMI) and across nodes (the device's InfiniBand/Ethernet NIC share); 0 when not given.
  double intra_node_bandwidth = 0;
  double inter_node_bandwidth = 0;
  // The share of the intra-node link NCCL's collectives and point-to-point sends move: its per-link
  // NVLink rate over the link's signalling rate (NVIDIA/nccl src/graph/topo.h, SM80_NVLINK_BW 20 of
  // 25 GB/s, SM90 20.6 of 25, SM100 40.1 of 50); 0 when not given (the link's full rate).
  double intra_node_collective_share = 0;
  // Where the node's NVSwitches reduce in the switch (NVLink SHARP, third-generation NVSwitch and
  // later), the architecture whose NVLS constants NCCL applies (estimate/collectives.h); kNone when
  // not given (no NVLS all-reduce).
  NvlsArch nvls = NvlsArch::kNone;
  // The devices one scale-up link joins (an NVL72 rack's 72): a training run's default
  // --gpus-per-node; 0 when not given (8, an HGX board's).
  uint64_t gpus_per_node = 0;
  double board_power_w = 0;  // the board's rated power (TDP/TBP), watts; 0 when not given
  // dtype -> the fraction of the dense peak large GEMMs reach (cuBLAS at large square shapes);
  // absent: training time falls back to a fixed MFU.
  std::map<GemmDType, double> gemm_efficiency;
  // The fraction of the 16-bit dense peak a fused (flash) attention kernel reaches over its forward
  // and backward, whose GEMMs keep the s x s scores on chip; 0 when not given (gemm_efficiency stands in).
  double attention_efficiency = 0;
  // The fraction of memory_bandwidth a decode step's weight-streaming GEMMs (M = 1..64 tokens) reach
  // past the L2 cache; 0 when not measured (inference then assumes kDefaultMbu).
  double decode_bandwidth_efficiency = 0;
  std::map<GemmDType, double> peak_flops;  // dtype -> dense FLOP/s: fp64, fp32, tf32, fp16, bf16, fp8, int8
  // dtype -> a GEMM rate measured on this device (`tally measure --calibrate`); time uses it as the
  // achieved FLOP/s when neither --mfu nor --achieved is given.
  std::map<GemmDType, double> achieved_flops;
  std::vector<std::string> sources;
  // Field key as the file spells it (memory_bandwidth, peak_flops.bf16, gemm_efficiency.fp16) -> where
  // its value comes from (`field_sources:`; `tally hardware NAME --explain` prints them).
  std::map<std::string, std::string> field_sources;
  double host_bandwidth = 0;  // bytes/s per direction of the device's host link (PCIe); 0 when not given

  // The dense peak for `dtype`, or nullopt when the catalog gives none.
  std::optional<double> Peak(GemmDType dtype) const;
  // Bytes/s per direction per device that NCCL moves inside a node: intra_node_bandwidth (else
  // interconnect_bandwidth) x intra_node_collective_share.
  double IntraNodeCollectiveBandwidth() const;
};

// A catalog name or alias (`tally hardware`), in any case, or a path to a hardware YAML file.
HardwareSpec ResolveHardware(const std::string& arg);

// Reads a hardware file from memory; `file` names it in errors.
HardwareSpec LoadHardwareText(const std::string& file, const std::string& text);

std::vector<std::string> HardwareNames();

// The keys `field_sources:` may name, in the order `hardware --explain` lists them: the scalar fields,
// then peak_flops.<dtype>, gemm_efficiency.<dtype> and achieved_flops.<dtype>.
std::vector<std::string> HardwareFieldKeys();

// The catalog name `arg` stands for (a name or an alias, in any case), or "".
std::string FindHardwareName(const std::string& arg);

// " (did you mean 'X'?)" for an unknown device: the one device `arg` is a prefix of, else the one
// whose family (the name before its first '-') `arg` starts with, else the closest spelling of a
// name or alias; "" when none.
std::string HardwareSuggestion(const std::string& arg);

}  // namespace tally
