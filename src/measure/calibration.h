// `measure --calibrate FILE`: the measured machine as a hardware file in the schema of
// configs/hardware/*.yaml (name, kind, memory, measured bandwidth, computed peak_flops), loadable
// by `tally time --hardware FILE`; the achieved FLOP/s and MFU per dtype ride along in comments
// and `sources`, with the --mfu to pass.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "measure/gemm_shape.h"

namespace tally {

struct Calibration {
  std::string name;  // "cpu", or the GPU's name as a slug
  std::string description;
  std::string kind;  // cpu | gpu
  uint64_t memory_bytes = 0;
  double memory_bandwidth = 0;  // bytes/s; 0: not measured, left out
  double clock_hz = 0;
  int threads = 0;
  std::vector<std::pair<GemmDType, double>> peak_flops;    // computed (or datasheet, or --peak)
  std::vector<std::pair<GemmDType, double>> probed_flops;  // FMA loop; CPU only
  std::vector<std::pair<GemmDType, double>> achieved_flops;
  std::vector<std::pair<GemmDType, double>> mfu;
  std::string source;  // what was timed: "GEMM sweep ..." or "gpt2-small step"
};

std::string CalibrationYaml(const Calibration& c);

// "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3".
std::string Slug(const std::string& name);

}  // namespace tally
