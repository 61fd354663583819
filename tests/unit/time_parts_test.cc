// The step model's measured and published parts against their sources: each eager op's bytes, SM
// time and kernels and AdamW's against the H100 and H200 measurements they were taken from, the GEMM shape table
// against the sweep it was generated from, NCCL's algorithm choice by hand from its tuning model, and
// the pipeline bubbles of 1F1B, interleaved 1F1B, ZB-H1 and DualPipe by hand from their papers, and
// decode's kernel floors and bandwidth against the H200 decode sweep.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "config/hardware.h"
#include "estimate/attention_rate.h"
#include "estimate/collectives.h"
#include "estimate/gemm_shape.h"
#include "estimate/kernel_costs.h"
#include "estimate/power_limit.h"
#include "estimate/step_model.h"
#include "unit/run_tally.h"

namespace tally {
namespace {

nlohmann::json Data(const std::string& name) {
  std::ifstream in(std::string(TALLY_SOURCE_DIR) + "/docs/data/" + name);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

Layer Node(LayerKind kind, ElementwiseOp op = ElementwiseOp::kGeneric) {
  Layer l;
  l.kind = kind;
  l.op = op;
  return l;
}

// One measured cost per element from the two devices' files: the seconds per element (bytes at the
// copy bandwidth measured beside them) on the H100 (3.35 TB/s) and the H200 (4.8 TB/s), solved for
// t = bytes / (0.85 x datasheet bandwidth) + SM seconds; a negative SM part is 0, the bytes then the
// least-squares fit to both.
ElementCost SplitOf(double h100_bytes, double h200_bytes) {
  const double h100_seconds = h100_bytes / Data("h100-op-costs.json")["copy_bytes_per_second"].get<double>();
  const double h200_seconds = h200_bytes / Data("h200-op-costs.json")["copy_bytes_per_second"].get<double>();
  const double inv100 = 1 / (3.35e12 * kCopyEfficiency), inv200 = 1 / (4.8e12 * kCopyEfficiency);
  const double bytes = (h100_seconds - h200_seconds) / (inv100 - inv200);
  const double sm = h200_seconds - bytes * inv200;
  if (sm >= 0) return {bytes, sm};
  return {(h100_seconds * inv100 + h200_seconds * inv200) / (inv100 * inv100 + inv200 * inv200), 0};
}

void CheckCost(const ElementCost& got, const ElementCost& want) {
  CHECK(got.bytes == doctest::Approx(want.bytes).epsilon(2e-3));
  CHECK(got.sm_seconds == doctest::Approx(want.sm_seconds).epsilon(6e-3).scale(1e-15));
}

TEST_CASE("time parts: each eager op's bytes and SM time are the H100's and H200's measurements") {
  // docs/data/h100-op-costs.json and h200-op-costs.json (bytes: CUDA-graph GPU time x copy bandwidth /
  // elements) and h200-op-costs-first-run.json (kernels of one call).
  const nlohmann::json h100 = Data("h100-op-costs.json")["ops"];
  const nlohmann::json h200 = Data("h200-op-costs.json")["ops"];
  const nlohmann::json first = Data("h200-op-costs-first-run.json")["ops"];
  const auto split = [&](const std::string& op, const char* phase) {
    const std::string key = std::string(phase) + "_bytes_per_element";
    return SplitOf(h100[op][key].get<double>(), h200[op][key].get<double>());
  };
  struct Row {
    Layer node;
    const char* name;       // the measurement, without its dtype suffix
    bool fp32_measured;     // else fp32 is twice the bf16 figures
    const char* loss_fp32;  // the loss's fp32 row has its own name
  };
  const std::vector<Row> rows = {
      {Node(LayerKind::kNorm, ElementwiseOp::kRmsNorm), "rmsnorm_hf", true, nullptr},
      {Node(LayerKind::kNorm, ElementwiseOp::kLayerNorm), "layernorm", true, nullptr},
      {Node(LayerKind::kActivation, ElementwiseOp::kActivation), "gelu", true, nullptr},
      {Node(LayerKind::kActivation, ElementwiseOp::kGeluInOps), "gelu_new", true, nullptr},
      {Node(LayerKind::kActivation, ElementwiseOp::kGatedActivation), "silu_mul", true, nullptr},
      {Node(LayerKind::kResidualAdd), "residual_add", true, nullptr},
      {Node(LayerKind::kDropout), "dropout", true, nullptr},
      {Node(LayerKind::kRope), "rope_hf_layout", false, nullptr},
      {Node(LayerKind::kEmbedding), "embedding", false, nullptr},
      {Node(LayerKind::kLoss), "loss_hf", false, "loss_fp32_v128256"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    const std::string bf16 = std::string(row.name) + (row.node.kind == LayerKind::kLoss ? "_bf16_v128256" : "_bf16");
    const OpTraffic half = ElementwiseTraffic(row.node, Kernels::kEager, 2);
    CHECK(half.measured);
    CheckCost({half.forward_bytes, half.forward_sm_seconds}, split(bf16, "forward"));
    CheckCost({half.backward_bytes, half.backward_sm_seconds}, split(bf16, "backward"));
    // The model gives each device its measured time: here the H100's forward, per element.
    CHECK(half.forward_bytes / (3.35e12 * kCopyEfficiency) + half.forward_sm_seconds ==
          doctest::Approx(h100[bf16]["forward_bytes_per_element"].get<double>() /
                          Data("h100-op-costs.json")["copy_bytes_per_second"].get<double>())
              .epsilon(5e-3)
              .scale(0));
    const OpTraffic wide = ElementwiseTraffic(row.node, Kernels::kEager, 4);
    if (row.loss_fp32 != nullptr || row.fp32_measured) {
      const std::string fp32 = row.loss_fp32 != nullptr ? row.loss_fp32 : std::string(row.name) + "_fp32";
      CheckCost({wide.forward_bytes, wide.forward_sm_seconds}, split(fp32, "forward"));
      CheckCost({wide.backward_bytes, wide.backward_sm_seconds}, split(fp32, "backward"));
    } else {
      CHECK(wide.forward_bytes == doctest::Approx(2 * half.forward_bytes));
      CHECK(wide.forward_sm_seconds == doctest::Approx(2 * half.forward_sm_seconds).epsilon(5e-3).scale(0));
      CHECK(wide.backward_bytes == doctest::Approx(2 * half.backward_bytes));
      CHECK(wide.backward_sm_seconds == doctest::Approx(2 * half.backward_sm_seconds).epsilon(5e-3).scale(0));
    }
    // Kernels from the first run (the rope row of its first layout, the loss's bf16 row).
    const std::string counted = row.node.kind == LayerKind::kRope ? "rope_hf_bf16" : bf16;
    const double forward = first[counted]["forward_kernels"].get<double>();
    CHECK(half.forward_kernels == forward);
    CHECK(half.backward_kernels == first[counted]["forward_backward_kernels"].get<double>() - forward);
  }
  // Fused, and an eager op not measured (the attention's softmax): a read and a write forward, twice
  // that backward, no SM time beyond.
  for (const Layer& l : {Node(LayerKind::kNorm, ElementwiseOp::kRmsNorm), Node(LayerKind::kSoftmax)}) {
    const OpTraffic t = ElementwiseTraffic(l, l.kind == LayerKind::kSoftmax ? Kernels::kEager : Kernels::kFused, 2);
    CHECK(t.forward_bytes == 4);
    CHECK(t.backward_bytes == 8);
    CHECK(t.forward_sm_seconds == 0);
    CHECK_FALSE(t.measured);
  }
  // Under autocast the norm and the residual stream take their fp32 figures, an activation of a
  // GEMM's output its bf16 one.
  CHECK(ElementwiseTraffic(rows[0].node, Kernels::kEager, 2, true).forward_bytes ==
        ElementwiseTraffic(rows[0].node, Kernels::kEager, 4).forward_bytes);
  CHECK(ElementwiseTraffic(rows[4].node, Kernels::kEager, 2, true).forward_bytes ==
        ElementwiseTraffic(rows[4].node, Kernels::kEager, 2).forward_bytes);
  // AdamW per parameter: the wall time of one step (launches included) x copy bandwidth, split alike.
  for (const auto& [impl, impl_name] :
       {std::pair{OptimizerImpl::kForeach, "foreach"}, std::pair{OptimizerImpl::kFused, "fused"},
        std::pair{OptimizerImpl::kForLoop, "for-loop"}}) {
    const std::string name = impl_name;  // clang cannot capture a structured binding
    CAPTURE(name);
    for (const auto& [bytes, suffix] : {std::pair{2.0, "_bf16"}, std::pair{4.0, "_fp32"}}) {
      const std::string op = "adamw_" + name + suffix;
      CheckCost(*MeasuredAdamCost(impl, bytes),
                SplitOf(h100[op]["bytes_per_param"].get<double>(), h200[op]["bytes_per_param"].get<double>()));
    }
  }
  CHECK(OptimizerKernelsPerTensor(OptimizerImpl::kForLoop) ==
        first["adamw_for-loop_bf16"]["kernels"].get<double>() / 64);  // 64 tensors
  // The copy's share of the H200's 4.8 TB/s the bytes are at (the H100's 3.35: 0.88).
  CHECK(kCopyEfficiency ==
        doctest::Approx(Data("h200-op-costs.json")["copy_bytes_per_second"].get<double>() / 4.8e12).epsilon(0.005));
  // The SM part as measured on the devices of the measured SMs (fp32 peak 67 TFLOP/s: H100 SXM, H200,
  // H800); elsewhere as bytes at the H200's copy bandwidth: on an A100 80GB (2.039 TB/s) 4.8 / 2.039.
  CHECK(SmSecondsScale(67e12, 3.35e12 * kCopyEfficiency) == 1);
  CHECK(SmSecondsScale(66.9e12, 4.8e12 * kCopyEfficiency) == 1);
  CHECK(SmSecondsScale(19.5e12, 2.039e12 * kCopyEfficiency) == doctest::Approx(4.8 / 2.039));
  CHECK(SmSecondsScale(std::nullopt, 2.039e12 * kCopyEfficiency) == doctest::Approx(4.8 / 2.039));
}

TEST_CASE("time parts: the GEMM shape table is the H200 sweep's, bandwidth-bound shapes left to the memory term") {
  // docs/data/h200-gemm-sweep.json: each shape's efficiency over the dtype's best, or 1 where the
  // kernels ran within 25% of their operands' time at the H200's copy bandwidth (4.094 TB/s).
  const nlohmann::json sweep = Data("h200-gemm-sweep.json");
  const std::vector<std::pair<const char*, GemmDType>> dtypes = {
      {"bf16", GemmDType::kBf16}, {"fp8", GemmDType::kFp8}, {"tf32", GemmDType::kTf32}, {"fp32", GemmDType::kFp32}};
  const auto peak = [](GemmDType d) {
    return d == GemmDType::kBf16   ? 989.5e12
           : d == GemmDType::kFp8  ? 1978.9e12
           : d == GemmDType::kTf32 ? 494.7e12
                                   : 66.9e12;
  };
  const auto bytes = [](GemmDType d) { return d == GemmDType::kFp8 ? 1.0 : d == GemmDType::kBf16 ? 2.0 : 4.0; };
  for (const auto& [dtype_name, dtype] : dtypes) {
    const std::string name = dtype_name;  // clang cannot capture a structured binding
    CAPTURE(name);
    const nlohmann::json& seconds = sweep["seconds"][name];
    double best = 0;
    for (const auto& [key, t] : seconds.items()) {
      double m = 0, n = 0, k = 0;
      std::sscanf(key.c_str(), "%lf,%lf,%lf", &m, &n, &k);
      best = std::max(best, 2 * m * n * k / t.get<double>() / peak(dtype));
    }
    for (const auto& [cell, t] : seconds.items()) {
      const std::string key = cell;  // clang cannot capture a structured binding
      double m = 0, n = 0, k = 0;
      std::sscanf(key.c_str(), "%lf,%lf,%lf", &m, &n, &k);
      CAPTURE(key);
      const double memory = (m * k + k * n + m * n) * bytes(dtype) / 4.094e12;
      const double expected =
          t.get<double>() <= 1.25 * memory ? 1 : 2 * m * n * k / t.get<double>() / peak(dtype) / best;
      CHECK(std::abs(GemmShapeFactor(dtype, m, n, k) - std::min(1.0, expected)) <= 0.0005);  // table: 3 decimals
    }
  }
  // Off the grid, held at its edges: a 16-row product rolls off as 64 rows do.
  CHECK(GemmShapeFactor(GemmDType::kBf16, 16, 4096, 4096) == GemmShapeFactor(GemmDType::kBf16, 64, 4096, 4096));
  // The unaligned factor: the median of every 16-bit product's rate over its aligned twin's.
  std::vector<double> ratios;
  const nlohmann::json rows = Data("h200-gemm-align.json")["rows"];
  for (const nlohmann::json& r : rows) {
    const uint64_t n = r["n"].get<uint64_t>();
    if (r["dtype"] == "fp32" || n % 8 == 0) continue;
    for (const nlohmann::json& twin : rows) {
      if (twin["dtype"] != r["dtype"] || twin["m"] != r["m"] || twin["k"] != r["k"]) continue;
      if (twin["n"].get<uint64_t>() != (n == 50257 ? 50304 : n - 1)) continue;
      for (const char* part : {"forward", "grad_input", "grad_weight"}) {
        ratios.push_back(r[std::string(part) + "_tflops"].get<double>() /
                         twin[std::string(part) + "_tflops"].get<double>());
      }
    }
  }
  REQUIRE(ratios.size() == 72);
  std::sort(ratios.begin(), ratios.end());
  const double median = (ratios[35] + ratios[36]) / 2;
  CHECK(GemmAlignmentFactor(GemmDType::kBf16, 50257, 768) == doctest::Approx(median).epsilon(0.005));
  CHECK(GemmAlignmentFactor(GemmDType::kBf16, 50304, 768) == 1);
  CHECK(GemmAlignmentFactor(GemmDType::kFp32, 50257, 768) == 1);  // fp32 ran at its aligned rate
}

TEST_CASE("time parts: the power table is the H200 steady sweep's, the grouped GEMMs its check") {
  // docs/data/h200-steady-gemm.json: each shape's burst time over its time right after 100 ms of
  // back-to-back 8192^3 products, both on one H200 (at most 1; 1 where the steady kernels ran within
  // 25% of their operands' time at the H200's copy bandwidth).
  const nlohmann::json sweep = Data("h200-steady-gemm.json");
  for (const auto& [dtype_name, dtype] : {std::pair{"bf16", GemmDType::kBf16}, std::pair{"fp8", GemmDType::kFp8}}) {
    const std::string name = dtype_name;  // clang cannot capture a structured binding
    CAPTURE(name);
    const double bytes = dtype == GemmDType::kFp8 ? 1 : 2;
    for (const auto& [cell, held] : sweep["steady"][name].items()) {
      const std::string key = cell;
      double m = 0, n = 0, k = 0;
      std::sscanf(key.c_str(), "%lf,%lf,%lf", &m, &n, &k);
      CAPTURE(key);
      const double memory = (m * k + k * n + m * n) * bytes / 4.094e12;
      const double expected =
          held.get<double>() <= 1.25 * memory ? 1 : sweep["burst"][name][key].get<double>() / held.get<double>();
      CHECK(std::abs(GemmPowerFactor(dtype, m, n, k) - std::min(1.0, expected)) <= 0.0005);  // 3 decimals
    }
  }
  // The same file's grouped GEMMs (torch._grouped_mm, 8 or 16 experts of 128-4,096 rows, at the power
  // limit) against tally's price of a routed expert linear (estimate/step_model.cc): E products of
  // their rows per expert at the H200's best bf16 rate x the shape factor x tile quantization x the
  // power factor at weight 1, or their operands at 4.8 TB/s where slower. Not fitted: measured over
  // tally, a median of 1.02; 0.68-1.15 from 512 rows per expert, 0.48-1.69 under.
  const HardwareSpec h200 = ResolveHardware("h200");
  std::vector<double> all, large;
  for (const nlohmann::json& row : sweep["grouped"]) {
    const double e = row["experts"].get<double>(), r = row["rows"].get<double>();
    const double n = row["n"].get<double>(), k = row["k"].get<double>();
    const double rate =
        989.5e12 * h200.gemm_efficiency.at(GemmDType::kBf16) * GemmShapeFactor(GemmDType::kBf16, r, n, k) *
        TileEfficiency(static_cast<uint64_t>(r), static_cast<uint64_t>(n)) * GemmPowerFactor(GemmDType::kBf16, r, n, k);
    const double tally = std::max(2 * e * r * n * k / rate, (e * r * k + e * k * n + e * r * n) * 2 / 4.8e12);
    const double ratio = row["grouped_s"].get<double>() / tally;
    all.push_back(ratio);
    if (r >= 512) large.push_back(ratio);
  }
  REQUIRE(all.size() == 36);
  std::sort(all.begin(), all.end());
  std::sort(large.begin(), large.end());
  CHECK((all[17] + all[18]) / 2 == doctest::Approx(1.02).epsilon(0.02));
  CHECK(large.front() > 0.65);
  CHECK(large.back() < 1.2);
}

TEST_CASE("time parts: the power limit read as a clock against the clocks of real H100 steps") {
  // Not fitted: docs/data/h100-step-clocks.json sampled the SM clock every 5 ms over real Hugging Face
  // steps on an H100 SXM (scripts/gpu/step_times.py --clocks). tally's weight at each step's GEMM share,
  // read as a clock: 1,980 MHz less the weight x the duty sweep's fall at share 1 (1,980 less the
  // 1,425 MHz of docs/data/h100-gemm-duty.json's back-to-back point). Within 5% of the measured
  // median; where GEMMs fill the step tally under-reads the fall (Llama 3 8B: 1,816 against 1,740).
  double full_duty_mhz = 0;
  const nlohmann::json duty_sweep = Data("h100-gemm-duty.json");
  for (const nlohmann::json& p : duty_sweep["points"]) {
    if (p["dtype"] == "bf16" && p["filler"] == "none") full_duty_mhz = p["sm_mhz_median"].get<double>();
  }
  REQUIRE(full_duty_mhz == 1425);
  const std::vector<std::pair<std::string, std::vector<std::string>>> steps = {
      {"llama8b_bf16_gc_b1_s4096", {"llama-3-8b", "--batch", "1", "--seq", "4096", "--recompute", "full"}},
      {"llama1b_bf16_b4_s2048", {"llama-3.2-1b", "--batch", "4", "--seq", "2048"}},
      {"llama1b_bf16_b1_s2048", {"llama-3.2-1b", "--batch", "1", "--seq", "2048"}},
      {"llama3b_bf16_b1_s2048", {"llama-3.2-3b", "--batch", "1", "--seq", "2048"}},
  };
  const nlohmann::json cases = Data("h100-step-clocks.json")["cases"];
  for (const auto& step : steps) {
    const std::string& name = step.first;  // clang cannot capture a structured binding
    const std::vector<std::string>& model = step.second;
    CAPTURE(name);
    double measured = 0;
    for (const nlohmann::json& c : cases) {
      if (c["name"] == name) measured = c["clocks"]["sm_mhz_median"].get<double>();
    }
    REQUIRE(measured > 0);
    std::vector<std::string> args = {"time"};
    args.insert(args.end(), model.begin(), model.end());
    args.insert(args.end(), {"--precision", "bf16", "--hardware", "h100-sxm", "--tokens", "1e9"});
    const double duty = testing::RunJson(args)["time"]["power"]["tensor_duty"].get<double>();
    const double clock = 1980 - PowerLimitWeight(GemmDType::kBf16, duty) * (1980 - full_duty_mhz);
    CAPTURE(clock);
    CHECK(std::abs(clock / measured - 1) <= 0.05);
  }
}

TEST_CASE("time parts: the H100's own long GEMMs confirm its rates (the H200's roll-off x the catalog's best)") {
  // shared/reference/h100-measured.md (an H100 SXM, cuBLAS 13.1 through PyTorch 2.11, single
  // torch.matmul calls timed with CUDA events): every shape whose GEMM takes at least 0.5 ms, where a
  // launch (about 20 us) moves the rate by under 4%. Not fitted: the rates come from the H200 sweep
  // and the catalog's best-shape efficiency (Bekman's maximum achievable matmul table).
  struct Measured {
    GemmDType dtype;
    double m, n, k, efficiency;
  };
  const Measured rows[] = {
      {GemmDType::kBf16, 16384, 4096, 4096, 0.72},  {GemmDType::kBf16, 4096, 4096, 14336, 0.75},
      {GemmDType::kBf16, 16384, 4096, 14336, 0.65}, {GemmDType::kBf16, 16384, 6144, 4096, 0.73},
      {GemmDType::kBf16, 4096, 8192, 8192, 0.71},   {GemmDType::kBf16, 16384, 8192, 8192, 0.62},
      {GemmDType::kBf16, 4096, 14336, 4096, 0.72},  {GemmDType::kBf16, 16384, 14336, 4096, 0.65},
      {GemmDType::kBf16, 1024, 28672, 8192, 0.71},  {GemmDType::kBf16, 4096, 28672, 8192, 0.69},
      {GemmDType::kBf16, 16384, 28672, 8192, 0.66}, {GemmDType::kBf16, 1024, 128256, 4096, 0.69},
      {GemmDType::kBf16, 4096, 128256, 4096, 0.67}, {GemmDType::kBf16, 16384, 128256, 4096, 0.68},
      {GemmDType::kFp8, 16384, 4096, 14336, 0.62},  {GemmDType::kFp8, 16384, 6144, 4096, 0.59},
      {GemmDType::kFp8, 4096, 8192, 8192, 0.55},    {GemmDType::kFp8, 16384, 8192, 8192, 0.65},
      {GemmDType::kFp8, 16384, 14336, 4096, 0.59},  {GemmDType::kFp8, 4096, 28672, 8192, 0.63},
      {GemmDType::kFp8, 16384, 28672, 8192, 0.62},  {GemmDType::kFp8, 1024, 128256, 4096, 0.62},
      {GemmDType::kFp8, 4096, 128256, 4096, 0.59},  {GemmDType::kFp8, 16384, 128256, 4096, 0.61},
  };
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  for (GemmDType dtype : {GemmDType::kBf16, GemmDType::kFp8}) {
    std::vector<double> ratios;
    for (const Measured& r : rows) {
      if (r.dtype != dtype) continue;
      const double tally = h100.gemm_efficiency.at(dtype) * GemmShapeFactor(dtype, r.m, r.n, r.k);
      CAPTURE(r.m);
      CAPTURE(r.n);
      CAPTURE(r.k);
      CHECK(std::abs(r.efficiency / tally - 1) <= 0.18);  // bf16 0.90-1.09, fp8 0.83-1.03
      ratios.push_back(r.efficiency / tally);
    }
    std::sort(ratios.begin(), ratios.end());
    const double median = (ratios[(ratios.size() - 1) / 2] + ratios[ratios.size() / 2]) / 2;
    CAPTURE(median);
    CHECK(std::abs(median - 1) <= 0.03);  // bf16 1.00 of 14, fp8 0.98 of 10
  }
}

TEST_CASE("time parts: decode's kernel floors and bandwidth are the H200 decode sweep's") {
  // docs/data/h200-decode-sweep.json (scripts/gpu/decode_sweep.py): the least-squares line
  // t = floor + bytes / rate through the bf16 decode GEMMs at M = 1..64 over weights of 100 MB and
  // more (past the L2 cache); its intercept is the GEMM floor, its slope over 4.8 TB/s the H200's
  // decode_bandwidth_efficiency in configs/hardware/h200.yaml.
  const nlohmann::json d = Data("h200-decode-sweep.json");
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& w : d["weights"]) {
    const double rows = w[0].get<double>(), cols = w[1].get<double>();
    if (2 * rows * cols < 100e6) continue;
    for (const auto& mj : d["m"]) {
      const double m = mj.get<double>();
      if (m > 64) continue;
      const std::string key =
          std::to_string(mj.get<int>()) + "," + std::to_string(w[0].get<int>()) + "," + std::to_string(w[1].get<int>());
      const double x = 2 * (rows * cols + m * cols + m * rows), y = d["gemm"]["bf16"][key].get<double>();
      n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
  }
  CHECK(n == 84);
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx), intercept = (sy - slope * sx) / n;
  CHECK(kGpuKernelFloors.gemm == doctest::Approx(intercept).epsilon(0.005));
  const HardwareSpec h200 = ResolveHardware("h200");
  CHECK(h200.memory_bandwidth == 4.8e12);
  CHECK(h200.decode_bandwidth_efficiency == doctest::Approx(1 / slope / h200.memory_bandwidth).epsilon(0.001));
  // The elementwise floor: the median of the add kernels over 1 to 256 KiB operands.
  std::vector<double> small;
  for (const auto& [bytes, seconds] : d["stream"].items()) {
    if (std::stod(bytes) <= 256 * 1024) small.push_back(seconds.get<double>());
  }
  REQUIRE(small.size() == 5);
  std::sort(small.begin(), small.end());
  CHECK(kGpuKernelFloors.elementwise == doctest::Approx(small[2]).epsilon(0.005));
  // The attention floor: SDPA's decode kernel at batch 1 over 128 cached positions.
  CHECK(kGpuKernelFloors.attention == doctest::Approx(d["attention"]["1,128"].get<double>()).epsilon(0.005));
}

TEST_CASE("time parts: tinygemm's bandwidth and compute rate are the H200 int4 sweep's") {
  // docs/data/h200-int4-sweep.json (scripts/gpu/int4_sweep.py): PyTorch's W4A16 kernel and cuBLAS bf16
  // at the same decode shapes, over the weights of 100 MB and more in bf16 (as the bf16 line above).
  // At M = 1 and 2 tokens both stream: the ratio of the slopes of t = floor + bytes / rate, with
  // tinygemm's bytes those it stores (n k / 2 packed, a bf16 scale and zero per group of 128 and
  // output), is kTinygemmCost.bandwidth. From M = 8 to 64 its time grows with the FLOPs: the slope
  // of t = a + 2 m n k / rate over the bf16 peak is kTinygemmCost.compute.
  const nlohmann::json d = Data("h200-int4-sweep.json");
  REQUIRE(d["group"].get<double>() == 128);
  struct Line {
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    void Add(double x, double y) { n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y; }
    double Slope() const { return (n * sxy - sx * sy) / (n * sxx - sx * sx); }
    double Intercept() const { return (sy - Slope() * sx) / n; }
  };
  Line int4, bf16, flops;
  for (const auto& w : d["weights"]) {
    const double rows = w[0].get<double>(), cols = w[1].get<double>();
    if (2 * rows * cols < 100e6) continue;
    for (const auto& mj : d["m"]) {
      const double m = mj.get<double>();
      const std::string key =
          std::to_string(mj.get<int>()) + "," + std::to_string(w[0].get<int>()) + "," + std::to_string(w[1].get<int>());
      const double io = 2 * (m * cols + m * rows), t4 = d["int4"][key].get<double>();
      if (m <= 2) {
        int4.Add(rows * cols / 2 + cols / 128 * rows * 2 * 2 + io, t4);
        bf16.Add(2 * rows * cols + io, d["bf16"][key].get<double>());
      }
      if (m >= 8) flops.Add(2 * m * rows * cols, t4);
    }
  }
  CHECK(int4.n == 14);
  CHECK(flops.n == 28);
  CHECK(kTinygemmCost.bandwidth == doctest::Approx(bf16.Slope() / int4.Slope()).epsilon(0.002));
  const HardwareSpec h200 = ResolveHardware("h200");
  CHECK(kTinygemmCost.compute == doctest::Approx(1 / flops.Slope() / *h200.Peak(GemmDType::kBf16)).epsilon(0.002));
  // Its floor (3.57 us) is within 10% of the bf16 GEMM's, so tally keeps the one GEMM floor.
  CHECK(int4.Intercept() == doctest::Approx(kGpuKernelFloors.gemm).epsilon(0.1));
}

TEST_CASE("time parts: NCCL picks the tree for a large all-reduce across nodes, LL for a small one inside") {
  // NVIDIA/nccl src/graph/tuning.cc, by hand. 25 MiB over 1,024 ranks of 8 a node at 50 GB/s:
  // ring Simple 8.4 + 1,792 x 3.4 + 254 x 9.6 us = 8.54 ms of latency alone; tree Simple
  // 2 (7 x 28 + log2(128) x 50) = 1,092 us plus 2 x bytes at 0.9 of the link: the fastest.
  const double mib25 = 25.0 * 1024 * 1024;
  const Link nic{.bandwidth = 50e9, .network = true, .ranks_per_node = 8};
  CHECK(CollectiveSeconds(Collective::kAllReduce, 1024, mib25, 1, nic) ==
        doctest::Approx(1092e-6 + 2 * mib25 / (0.9 * 50e9)));
  // 1 KiB over 8 NVLink ranks: ring LL, 3.6 + 14 x 0.47 us, at a quarter of 450 GB/s.
  const Link nvlink{.bandwidth = 450e9};
  CHECK(CollectiveSeconds(Collective::kAllReduce, 8, 1024, 1, nvlink) ==
        doctest::Approx(3.6e-6 + 14 * 0.47e-6 + 2 * 7.0 / 8 * 1024 / (450e9 / 4)));
  // A reduce-scatter has no tree: 256 MiB over 8 NVLink ranks, ring Simple, 7 steps.
  CHECK(CollectiveSeconds(Collective::kReduceScatter, 8, 256.0 * 1024 * 1024, 1, nvlink) ==
        doctest::Approx(8.4e-6 + 7 * 3.4e-6 + 7.0 / 8 * 256 * 1024 * 1024 / 450e9));
  CHECK(CollectiveSeconds(Collective::kAllReduce, 8, 0, 1, nvlink) == 0);  // nothing to move, no call
}

TEST_CASE("time parts: inside an NVSwitch node NCCL reduces in the switches (NVLS) where that is faster") {
  // NVIDIA/nccl src/graph/tuning.cc and search.cc, by hand: c = min(n, 32) channels, one a GPU; each
  // GPU's switch link carries its own channel twice and each other's once, so (c + 1) x speed fits
  // the link, speed the fastest of the architecture's table that does; bus bandwidth 2 c speed e
  // (c - 1) / c, e = nvlsEfficiency (Hopper 0.85, Blackwell 0.74).
  const double h100 = 18 * 20.6e9, h800 = 8 * 20.6e9, b200 = 18 * 40.1e9;
  // 8 H100: 370.8 / 9 = 41.2 -> 40 GB/s (sm90: 60, 50, 40, ...): 476 GB/s; nccl-tests report 460-480.
  CHECK(NvlsBusBandwidth(8, NvlsArch::kHopper, h100) == doctest::Approx(2 * 8 * 40e9 * 0.85 * 7 / 8));
  // 4 H100: 370.8 / 5 = 74.2 -> 60: 306 GB/s, under the ring's 370.8.
  CHECK(NvlsBusBandwidth(4, NvlsArch::kHopper, h100) == doctest::Approx(2 * 4 * 60e9 * 0.85 * 3 / 4));
  // 8 H800 (8 links): 164.8 / 9 = 18.3 -> 15: 178.5 GB/s.
  CHECK(NvlsBusBandwidth(8, NvlsArch::kHopper, h800) == doctest::Approx(2 * 8 * 15e9 * 0.85 * 7 / 8));
  // 8 B200: 721.8 / 9 = 80.2 -> 80 (sm100: 90, 80, ...): 828.8 GB/s; 72 in a GB200 rack: 32 channels,
  // 721.8 / 33 = 21.9 -> 20: 917.6 GB/s.
  CHECK(NvlsBusBandwidth(8, NvlsArch::kBlackwell, b200) == doctest::Approx(2 * 8 * 80e9 * 0.74 * 7 / 8));
  CHECK(NvlsBusBandwidth(72, NvlsArch::kBlackwell, b200) == doctest::Approx(2 * 32 * 20e9 * 0.74 * 31 / 32));
  CHECK(NvlsBusBandwidth(8, NvlsArch::kNone, h100) == 0);

  // 256 MiB over 8 H100: NVLS, 25 us a call, faster than the ring.
  const double mib256 = 256.0 * 1024 * 1024;
  const Link hopper{.bandwidth = h100, .nvls = NvlsArch::kHopper};
  const double wire = 2 * 7.0 / 8 * mib256;
  const double ring = 8.4e-6 + 14 * 3.4e-6 + wire / h100;
  CHECK(CollectiveSeconds(Collective::kAllReduce, 8, mib256, 1, hopper) ==
        doctest::Approx(25e-6 + wire / (2 * 8 * 40e9 * 0.85 * 7 / 8)));
  CHECK(25e-6 + wire / (2 * 8 * 40e9 * 0.85 * 7 / 8) < ring);
  // 4 H100 and 2: the ring, as NCCL's model picks.
  CHECK(CollectiveSeconds(Collective::kAllReduce, 4, mib256, 1, hopper) ==
        doctest::Approx(8.4e-6 + 6 * 3.4e-6 + 2 * 3.0 / 4 * mib256 / h100));
  CHECK(CollectiveSeconds(Collective::kAllReduce, 2, mib256, 1, hopper) ==
        doctest::Approx(8.4e-6 + 2 * 3.4e-6 + mib256 / h100));
  // A reduce-scatter, or a group across nodes: no NVLS.
  const Link plain{.bandwidth = h100};
  CHECK(CollectiveSeconds(Collective::kReduceScatter, 8, mib256, 1, hopper) ==
        CollectiveSeconds(Collective::kReduceScatter, 8, mib256, 1, plain));
  CHECK(CollectiveSeconds(Collective::kAllReduce, 8, mib256, 1, plain) == doctest::Approx(ring));
  const Link nic{.bandwidth = 50e9, .network = true, .ranks_per_node = 8, .nvls = NvlsArch::kHopper};
  const Link nic_plain{.bandwidth = 50e9, .network = true, .ranks_per_node = 8};
  CHECK(CollectiveSeconds(Collective::kAllReduce, 16, mib256, 1, nic) ==
        CollectiveSeconds(Collective::kAllReduce, 16, mib256, 1, nic_plain));
}

TEST_CASE("time parts: the pipeline bubbles of 1F1B, interleaving, ZB-H1 and DualPipe by hand") {
  // 8 stages; a micro-batch's forward F = 1, whole backward B = 2 of which weight gradients W = 1.
  // 1F1B: (p - 1) = 7 (Narayanan et al. 2021, §2.2); interleaved over 2: 3.5; ZB-H1: (p - 1)(F + B -
  // 2W) / (F + B) = 7 x 1 / 3 (Qi et al. 2024, §3); DualPipe: (p/2 - 1)(F&B + B - 3W) / (F + B) with
  // F&B = F + B: 3 x 2 / 3 = 2 (DeepSeek-V3 report, Table 2).
  CHECK(BubbleStages(PipelineSchedule::k1f1b, 8, 1, 1, 2, 1) == 7);
  CHECK(BubbleStages(PipelineSchedule::kInterleaved, 8, 2, 1, 2, 1) == 3.5);
  CHECK(BubbleStages(PipelineSchedule::kZeroBubble, 8, 1, 1, 2, 1) == doctest::Approx(7.0 / 3));
  CHECK(BubbleStages(PipelineSchedule::kDualPipe, 8, 1, 1, 2, 1) == doctest::Approx(2));
  CHECK(BubbleStages(PipelineSchedule::k1f1b, 1, 1, 1, 2, 1) == 0);  // no pipeline, no bubble
  // Through the CLI: the schedule shrinks the reported bubble; DualPipe needs an even --pp.
  const auto bubble = [](const char* schedule) {
    return testing::RunJson({"time", "llama-2-7b", "--hardware", "h100-sxm", "--gpus", "8", "--pp", "4", "--grad-accum",
                             "8", "--tokens", "1B", "--pp-schedule", schedule})["time"]["breakdown"]["pipeline_bubble"]
        .get<double>();
  };
  CHECK(bubble("zero-bubble") < bubble("1f1b"));
  CHECK(bubble("dualpipe") < bubble("zero-bubble"));
  testing::CheckRefused(
      {"time", "llama-2-7b", "--hardware", "h100-sxm", "--gpus", "3", "--pp", "3", "--tokens", "1B", "--pp-schedule",
       "dualpipe"},
      "tally: error: --pp-schedule: dualpipe runs the pipeline from both ends and needs an even --pp, "
      "got 3");
  testing::CheckRefused({"time", "llama-2-7b", "--hardware", "h100-sxm", "--pp-schedule", "interleaved"},
                        "tally: error: --pp-schedule: interleaved needs --vp 2 or more (virtual stages per device)");
}

TEST_CASE("time parts: attention at the H100 sweep's kernel rates, cuDNN in 16-bit, memory-efficient in fp32") {
  // docs/data/h100-kernel-sweep.json, "attention_kernels": SDPA's default backend, forward + backward
  // kernel time, over the H100 SXM's bf16 (989.5) and fp32 (67) TFLOP/s peaks.
  const nlohmann::json sweep = Data("h100-kernel-sweep.json");
  int rows = 0;
  for (const nlohmann::json& r : sweep["attention_kernels"]) {
    const double bh = r["b"].get<double>() * r["heads"].get<double>();
    const double s = r["s"].get<double>(), d = r["d"].get<double>();
    const double tflops = r["forward_backward_kernel_tflops"].get<double>();
    CAPTURE(bh);
    CAPTURE(s);
    if (r["dtype"] == "bf16") {
      CHECK(CudnnAttentionEfficiency(bh, s, d) == doctest::Approx(tflops / 989.5).epsilon(0.002));
    } else {
      CHECK(Fp32AttentionEfficiency(bh, s, d) == doctest::Approx(tflops / 67).epsilon(0.005));
    }
    ++rows;
  }
  CHECK(rows == 28 + 18);
  // The event-timed sweep of the same shapes ("attention") agrees in fp32 within 10% (its eager
  // backward calls pay launch gaps), and with TF32 matmuls on the fp32 kernel is the same.
  for (const nlohmann::json& r : sweep["attention"]) {
    if (r["backend"] != "default" || r["dtype"] == "bf16") continue;
    CHECK(Fp32AttentionEfficiency(r["b"].get<double>() * r["heads"].get<double>(), r["s"].get<double>(),
                                  r["d"].get<double>()) ==
          doctest::Approx(r["forward_backward_tflops"].get<double>() / 67).epsilon(0.12));
  }
  // Between measured shapes: halfway in log2 of the sequence (1,024 and 2,048 at 8 heads, head dim
  // 64: 78.8 and 182.2 TFLOP/s in bf16), in the head dim (64 and 128 at 8 x 1,024: 10.5 and 17.9 in
  // fp32) and in log4 of batch x heads (8 and 32 at 1,024, head dim 64: 10.5 and 19.5 in fp32).
  CHECK(CudnnAttentionEfficiency(8, 1024 * std::sqrt(2.0), 64) == doctest::Approx((78.8 + 182.2) / 2 / 989.5));
  CHECK(Fp32AttentionEfficiency(8, 1024, 96) == doctest::Approx((10.5 + 17.9) / 2 / 67));
  CHECK(Fp32AttentionEfficiency(16, 1024, 64) == doctest::Approx((10.5 + 19.5) / 2 / 67));
  // Beyond them, the nearest measured, never less for more heads: 32 heads at 16,384 tokens in fp32,
  // where the sweep stopped at 4,096 (30.0), take the 8 heads' 32.1 there; 128 heads at 4,096 (the
  // sweep's 128 row stops at 1,024: 25.9) the 32 heads' 30.0.
  CHECK(Fp32AttentionEfficiency(32, 16384, 64) == doctest::Approx(32.1 / 67));
  CHECK(Fp32AttentionEfficiency(128, 4096, 64) == doctest::Approx(30.0 / 67));
  CHECK(Fp32AttentionEfficiency(128, 4096, 128) > Fp32AttentionEfficiency(32, 4096, 128) - 1e-12);
  CHECK(CudnnAttentionEfficiency(2, 512, 32) == doctest::Approx(78.8 / 989.5));
  // The cuDNN rates apply on the SMs they were measured on (fp32 peak 67 TFLOP/s: H100 SXM, H200,
  // H800), not on an A100 (19.5) or a B200.
  CHECK(OnMeasuredSms(67e12));
  CHECK(OnMeasuredSms(66.9e12));
  CHECK_FALSE(OnMeasuredSms(19.5e12));
  CHECK_FALSE(OnMeasuredSms(std::nullopt));
}

}  // namespace
}  // namespace tally
