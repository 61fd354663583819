// The hardware catalog's per-field sources (`field_sources:`) and `tally hardware NAME --explain`,
// which prints every field of a device with its source (issue 19, "Done when").
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "config/hardware.h"
#include "run_tally.h"
#include "util/error.h"

namespace tally {
namespace {

using testing::RunTally;

std::string Hardware(const std::string& extra) {
  return "memory_bytes: 85899345920\nmemory_bandwidth: 3.35e12\npeak_flops:\n  bf16: 989.5e12\n" + extra;
}

}  // namespace

TEST_CASE("hardware sources: every figure in the catalog names where it comes from") {
  for (const std::string& name : HardwareNames()) {
    CAPTURE(name);
    const HardwareSpec h = ResolveHardware(name);
    CHECK(h.field_sources.contains("memory_bytes"));
    CHECK(h.field_sources.contains("memory_bandwidth"));
    CHECK(h.field_sources.contains("interconnect_bandwidth"));
    const std::pair<const char*, double> optional[] = {{"intra_node_bandwidth", h.intra_node_bandwidth},
                                                       {"inter_node_bandwidth", h.inter_node_bandwidth},
                                                       {"board_power_w", h.board_power_w},
                                                       {"host_bandwidth", h.host_bandwidth},
                                                       {"attention_efficiency", h.attention_efficiency},
                                                       {"intra_node_collective_share", h.intra_node_collective_share},
                                                       {"nvls", h.nvls == NvlsArch::kNone ? 0.0 : 1.0},
                                                       {"gpus_per_node", static_cast<double>(h.gpus_per_node)}};
    for (const auto& field : optional) {
      CAPTURE(field.first);
      CHECK(h.field_sources.contains(field.first) == (field.second > 0));
    }
    for (const auto& peak : h.peak_flops)
      CHECK(h.field_sources.contains("peak_flops." + std::string(Name(peak.first))));
    for (const auto& eff : h.gemm_efficiency) {
      CAPTURE(Name(eff.first));
      CHECK(h.field_sources.contains("gemm_efficiency." + std::string(Name(eff.first))));
      // An efficiency is a fraction of a peak the file gives (configs/hardware/SOURCES.md, "GEMM efficiency").
      CHECK(h.peak_flops.contains(eff.first));
    }
  }
}

TEST_CASE("hardware sources: field_sources names fields, may explain an absent dtype, and holds text") {
  // An absent peak may carry the reason it is absent (no published figure).
  const HardwareSpec h = LoadHardwareText(
      "hw.yaml", Hardware("field_sources:\n  memory_bytes: a datasheet\n  peak_flops.fp64: not published\n"));
  CHECK(h.field_sources.at("memory_bytes") == "a datasheet");
  CHECK(h.field_sources.at("peak_flops.fp64") == "not published");
  CHECK_THROWS_WITH_AS(LoadHardwareText("hw.yaml", Hardware("field_sources:\n  memory_bandwith: x\n")),
                       doctest::Contains("hw.yaml:6:3: error: unknown key 'memory_bandwith' in 'field_sources' "
                                         "(did you mean 'memory_bandwidth'?)"),
                       InputError);
  CHECK_THROWS_WITH_AS(LoadHardwareText("hw.yaml", Hardware("field_sources:\n  board_power_w: [a, b]\n")),
                       "hw.yaml:6:18: error: 'board_power_w' in 'field_sources' must be a text, got a list",
                       InputError);
}

TEST_CASE("hardware sources: --explain shows every field with its source — JSON carries the sources") {
  const testing::TallyRun r = RunTally({"hardware", "a100-80gb", "--explain"});
  REQUIRE(r.code == 0);
  // configs/hardware/SOURCES.md, "Training-step fields": one 200 Gb/s HDR NIC per GPU = 25 GB/s.
  CHECK(r.out.find("      = inter_node_bandwidth 25.00 GB/s: DGX A100 User Guide") != std::string::npos);
  CHECK(r.out.find("      = board_power_w 400 W: NVIDIA A100 Tensor Core GPU Datasheet (2021)") != std::string::npos);
  CHECK(r.out.find("      = gemm_efficiency.bf16 0.87: Bekman, Machine Learning Engineering") != std::string::npos);
  CHECK(r.out.find("      = host_bandwidth 25.00 GB/s: PCI-SIG PCIe 4.0") != std::string::npos);
  // A dtype the file neither gives nor explains is left out (Ampere has no fp8).
  CHECK(r.out.find("peak_flops.fp8") == std::string::npos);
  const testing::TallyRun get = RunTally({"hardware", "--get", "hardware.a100-80gb.sources.peak.bf16"});
  CHECK(get.out.rfind("NVIDIA A100 Tensor Core GPU Datasheet (2021)", 0) == 0);
}

}  // namespace tally

namespace tally {

TEST_CASE("hardware sources: a measured GEMM efficiency is its source's TFLOP/s over the catalog's peak") {
  // Each row: the device-level measurement its field_sources quote, divided by the catalog's dense
  // peak of the dtype and rounded to two places (capped at 1.0, the schema's maximum).
  struct Measured {
    const char* device;
    GemmDType dtype;
    double tflops;
  };
  const Measured rows[] = {
      {"l40s", GemmDType::kFp8, 433.4},       // NVIDIA aiconfigurator, TensorRT-LLM 1.3.0rc20 GEMM sweep
      {"rtx-5090", GemmDType::kFp8, 388.91},  // pytorch/pytorch PR #155991, row-wise fp8 at 4096³
      {"mi355x", GemmDType::kFp8, 3293.23},   // HipKittens, hipBLASLt at 16384³
      {"a100-80gb", GemmDType::kTf32, 2 * 10240.0 * 10240 * 10240 / 0.016 / 1e12},  // PyTorch CUDA notes
      {"b200", GemmDType::kTf32, 869.7},                                            // OpenXLA's matmul table
      {"l4", GemmDType::kTf32, 31.88},  // zzc0721/torch-performance-test-data at 9d82827, 'NVIDIA L4'
      {"l4", GemmDType::kFp16, 68.83},
      {"l4", GemmDType::kBf16, 70.89},
      {"l4", GemmDType::kFp32, 15.38},
      {"h20", GemmDType::kTf32, 71.80},       // the same database, 'NVIDIA H20' (派欧云)
      {"rtx-4090", GemmDType::kTf32, 85.65},  // the same database: above its 82.6 peak, capped
      {"mi325x", GemmDType::kFp32, 130.6},    // ROCm gpu-operator issue #419, torch.matmul 16384²
  };
  for (const Measured& r : rows) {
    CAPTURE(r.device);
    CAPTURE(Name(r.dtype));
    const HardwareSpec h = ResolveHardware(r.device);
    const double ratio = std::min(1.0, std::round(r.tflops * 1e12 / *h.Peak(r.dtype) * 100) / 100);
    CHECK(h.gemm_efficiency.at(r.dtype) == doctest::Approx(ratio).scale(0));
  }
  // Carried over within one architecture (SOURCES.md, "carried over"), each from its named donor.
  struct Carried {
    const char *device, *donor;
    GemmDType dtype, donor_dtype;
  };
  const Carried carried[] = {
      {"l40", "l40s", GemmDType::kFp8, GemmDType::kFp8},
      {"l4", "l40s", GemmDType::kFp8, GemmDType::kFp8},
      {"b300", "b200", GemmDType::kTf32, GemmDType::kTf32},
      {"gb200", "b200", GemmDType::kTf32, GemmDType::kTf32},
      {"b300", "b200", GemmDType::kFp32, GemmDType::kFp32},
      {"gb200", "b200", GemmDType::kFp32, GemmDType::kFp32},
      {"mi300x", "mi325x", GemmDType::kFp32, GemmDType::kFp32},
      {"a10g", "a100-80gb", GemmDType::kTf32, GemmDType::kTf32},
      {"rtx-3090", "a100-80gb", GemmDType::kTf32, GemmDType::kTf32},
      {"l40s", "l4", GemmDType::kTf32, GemmDType::kTf32},
      {"l40", "rtx-4090", GemmDType::kTf32, GemmDType::kTf32},
      // Run at the device's own bf16 rate path: TPU v5p's fp8 at its bf16 rate, the H20's capped
      // tensor rate, the RTX 4090's FP32-accumulate half rate.
      {"tpu-v5p", "tpu-v5p", GemmDType::kFp8, GemmDType::kBf16},
      {"h20", "h20", GemmDType::kFp8, GemmDType::kBf16},
      {"rtx-4090", "rtx-4090", GemmDType::kFp8, GemmDType::kBf16},
  };
  for (const Carried& c : carried) {
    CAPTURE(c.device);
    CAPTURE(Name(c.dtype));
    CHECK(ResolveHardware(c.device).gemm_efficiency.at(c.dtype) ==
          ResolveHardware(c.donor).gemm_efficiency.at(c.donor_dtype));
  }
}

}  // namespace tally
