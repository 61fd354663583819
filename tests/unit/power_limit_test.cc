// The board's power limit (estimate/power_limit.h): which devices it is priced on, the duty sweep's
// weight, each shape's loss as the steady sweep measured it, and the step's fixed point.
#include "estimate/power_limit.h"

#include <doctest/doctest.h>

#include "config/hardware.h"
#include "estimate/gemm_shape.h"
#include "estimate/params.h"
#include "estimate/step_model.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

TEST_CASE("power limit: priced on GH100 at 700 W, the boards the sweeps measured, for the tensor cores") {
  for (const char* name : {"h100-sxm", "h200", "h800"}) {
    CAPTURE(name);
    const HardwareSpec hw = ResolveHardware(name);
    CHECK(PowerLimitPriced(hw, GemmDType::kBf16));
    CHECK(PowerLimitPriced(hw, GemmDType::kFp16));
    CHECK(PowerLimitPriced(hw, GemmDType::kFp8));
    // fp32 on the CUDA cores held 1,965 MHz under the limit; tf32 was not measured.
    CHECK_FALSE(PowerLimitPriced(hw, GemmDType::kFp32));
    CHECK_FALSE(PowerLimitPriced(hw, GemmDType::kTf32));
  }
  // Other SMs (the A100's, Blackwell's, the H100 PCIe's 51 TFLOP/s of fp32) or another limit: not measured.
  CHECK_FALSE(PowerLimitPriced(ResolveHardware("a100-80gb"), GemmDType::kBf16));
  CHECK_FALSE(PowerLimitPriced(ResolveHardware("b200"), GemmDType::kBf16));
  CHECK_FALSE(PowerLimitPriced(ResolveHardware("h100-pcie"), GemmDType::kBf16));
  HardwareSpec lowered = ResolveHardware("h100-sxm");
  lowered.board_power_w = 500;
  CHECK_FALSE(PowerLimitPriced(lowered, GemmDType::kBf16));
}

TEST_CASE("power limit: the weight is the duty sweep's loss of rate over its loss at duty 1") {
  // docs/data/h100-gemm-duty.json, the copy filler at 8 ms: bf16 products keep 0.9948, 0.9868, 0.8914
  // and 0.8595 of their burst rate at duties 0.247, 0.478, 0.786 and 1.
  CHECK(PowerLimitWeight(GemmDType::kBf16, 0) == 0);
  CHECK(PowerLimitWeight(GemmDType::kBf16, 1) == doctest::Approx(1));
  CHECK(PowerLimitWeight(GemmDType::kBf16, 0.786) == doctest::Approx((1 - 0.8914) / (1 - 0.8595)));
  // Halfway between 0.478 and 0.786, halfway between their rates.
  CHECK(PowerLimitWeight(GemmDType::kBf16, 0.632) == doctest::Approx((1 - (0.9868 + 0.8914) / 2) / (1 - 0.8595)));
  CHECK(PowerLimitWeight(GemmDType::kFp16, 0.632) == PowerLimitWeight(GemmDType::kBf16, 0.632));
  // fp8: 0.9703 at 0.484, 0.8393 at 1.
  CHECK(PowerLimitWeight(GemmDType::kFp8, 0.484) == doctest::Approx((1 - 0.9703) / (1 - 0.8393)));
  CHECK(PowerLimitWeight(GemmDType::kFp8, 1.5) == doctest::Approx(1));  // a duty is at most 1
}

TEST_CASE("power limit: a shape keeps its burst time over its steady time, as the H200 measured them") {
  // docs/data/h200-steady-gemm.json, bf16 4096 x 8192 x 8192 (m x n x k): 767.7 us in the burst grid,
  // 820.0 us right after the heater; 64 x 768 x 768: 3.658 and 4.909 us (a short product loses the
  // clock's whole fall, 1,440 of 1,980 MHz being 0.727). fp8 16384 x 4096 x 4096: 396.6 and 488.3 us.
  CHECK(GemmPowerFactor(GemmDType::kBf16, 4096, 8192, 8192) == doctest::Approx(767.68 / 820.02).epsilon(1e-3));
  CHECK(GemmPowerFactor(GemmDType::kBf16, 64, 768, 768) == doctest::Approx(3.6576 / 4.9088).epsilon(1e-3));
  CHECK(GemmPowerFactor(GemmDType::kFp8, 16384, 4096, 4096) == doctest::Approx(396.58 / 488.27).epsilon(1e-3));
  // 1024 x 50304 x 4096 timed faster steady (635 against 642 us): noise, held at 1.
  CHECK(GemmPowerFactor(GemmDType::kBf16, 1024, 50304, 4096) == 1);
  // fp32 runs on the CUDA cores, which held 1,965 MHz there; tf32 was not measured.
  CHECK(GemmPowerFactor(GemmDType::kFp32, 4096, 8192, 8192) == 1);
  CHECK(GemmPowerFactor(GemmDType::kTf32, 4096, 8192, 8192) == 1);
}

TEST_CASE("power limit: the step settles where its weight is the duty sweep's at its own GEMM share") {
  // GPT of 1,024 wide and 8 blocks on one H100 SXM, fused kernels: the GEMMs slow by the weight at
  // the share of the step they take, which the slower GEMMs raise; the rest of the step is unchanged.
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  s.seq = 2048;
  s.batch = s.micro_batch = 4;
  const LayerGraph g = testing::InlineGraph(
      "family: transformer\nvocab_size: 51200\ncontext_length: 2048\nd_model: 1024\nn_layers: 8\nn_heads: 16\n"
      "d_ff: 4096\n",
      s);
  const uint64_t params = CountParams(g).trainable;
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  const StepTime limited = TrainingStep(g, s, h100, 989.5e12, 0.8, params, {.kernels = Kernels::kFused});
  const StepTime burst =
      TrainingStep(g, s, h100, 989.5e12, 0.8, params, {.kernels = Kernels::kFused, .power_limit = false});
  CHECK(burst.power_weight == 0);
  CHECK(burst.power_limit == 0);
  // One device, no collective: the step is its compute, the GEMMs' share what the memory-bound ops
  // and the update leave.
  CHECK(limited.tensor_duty ==
        doctest::Approx((limited.compute - limited.optimizer - limited.memory_bound) / limited.step_seconds));
  CHECK(limited.power_weight == doctest::Approx(PowerLimitWeight(GemmDType::kBf16, limited.tensor_duty)).epsilon(1e-3));
  CHECK(limited.power_weight > 0);
  CHECK(limited.power_limit == doctest::Approx(limited.step_seconds - burst.step_seconds));
  CHECK(limited.memory_bound == doctest::Approx(burst.memory_bound));
  CHECK(limited.optimizer == doctest::Approx(burst.optimizer));
  // The GEMMs lose at most what the steadiest shape of the grid loses back to back (0.745 of the
  // burst rate at the least), and the GEMM share only rises.
  const double gemms = burst.compute - burst.optimizer - burst.memory_bound;
  CHECK(limited.power_limit > 0);
  CHECK(limited.power_limit < gemms * (1 / 0.745 - 1));
  CHECK(limited.tensor_duty > burst.tensor_duty);
  // On an A100 nothing was measured: nothing is priced.
  const StepTime a100 =
      TrainingStep(g, s, ResolveHardware("a100-80gb"), 312e12, 0.87, params, {.kernels = Kernels::kFused});
  CHECK(a100.power_weight == 0);
  CHECK(a100.power_limit == 0);
}

TEST_CASE("power limit: the share is the busiest stage's GEMMs under recomputation and pipelining") {
  // Two stages, full recomputation, fused kernels: the GEMM share is what the compute leaves after its
  // memory-bound ops (reruns included, on the busiest stage) and the update, over the step, bubble
  // and collectives included; in fp8 the weight follows the fp8 duty curve.
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kFp8);
  s.precision = Precision::kFp8;
  s.seq = 2048;
  s.pp = 2;
  s.gpus = 2;
  s.recompute = Recompute::kFull;
  s.batch = 8;
  s.micro_batch = 1;
  const LayerGraph g = testing::InlineGraph(
      "family: transformer\nvocab_size: 51200\ncontext_length: 2048\nd_model: 2048\nn_layers: 8\nn_heads: 16\n"
      "d_ff: 8192\n",
      [&] {
        Settings micro = s;
        micro.batch = 1;
        return micro;
      }());
  const uint64_t params = CountParams(g).trainable;
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  const StepTime t = TrainingStep(g, s, h100, 1978.9e12, 0.725, params, {.kernels = Kernels::kFused});
  REQUIRE(t.host < t.compute - t.optimizer);  // the GPU, not the launches, sets the pace
  REQUIRE(t.pipeline_bubble > 0);
  // The GEMM share leaves out the weights' fp8 casts too (4 bytes a weight, once a step), neither GEMMs
  // nor counted memory-bound ops: under 2% of the rest here.
  const StepTime burst =
      TrainingStep(g, s, h100, 1978.9e12, 0.725, params, {.kernels = Kernels::kFused, .power_limit = false});
  CHECK(burst.tensor_duty * burst.step_seconds > 0.98 * (burst.compute - burst.optimizer - burst.memory_bound));
  CHECK(t.power_weight == doctest::Approx(PowerLimitWeight(GemmDType::kFp8, t.tensor_duty)).epsilon(1e-3));
  CHECK(t.power_weight != doctest::Approx(PowerLimitWeight(GemmDType::kBf16, t.tensor_duty)).epsilon(1e-2));
  // The rerun blocks' memory-bound ops are non-GEMM time too: more of it than without recomputation.
  Settings plain = s;
  plain.recompute = Recompute::kNone;
  const StepTime none =
      TrainingStep(g, plain, h100, 1978.9e12, 0.725, params, {.kernels = Kernels::kFused, .power_limit = false});
  CHECK(burst.memory_bound > none.memory_bound);
  // fp32 GEMMs run on the CUDA cores, which held their clock: nothing priced.
  Settings fp32 = plain;
  fp32.precision = Precision::kFp32;
  fp32.dtypes = PolicyDtypes(Precision::kFp32);
  const StepTime cuda_cores = TrainingStep(g, fp32, h100, 66.9e12, 0.795, params, {.kernels = Kernels::kFused});
  CHECK(cuda_cores.power_weight == 0);
  CHECK(cuda_cores.power_limit == 0);
}

TEST_CASE("power limit: --no-power-limit gives the burst rates, and the keys say what the limit adds") {
  const std::vector<std::string> train = {"time", "llama-3.2-1b", "--hardware", "h100-sxm", "--batch",
                                          "4",    "--seq",        "2048",       "--tokens", "1e9"};
  std::vector<std::string> off = train;
  off.push_back("--no-power-limit");
  const nlohmann::json on = testing::RunJson(train)["time"], burst = testing::RunJson(off)["time"];
  // The GEMMs slow; the memory-bound ops and the update do not.
  CHECK(on["power"]["limit_seconds"].get<double>() > 0);
  CHECK(on["step_seconds"].get<double>() > burst["step_seconds"].get<double>());
  CHECK(on["compute"]["memory_bound"].get<double>() == doctest::Approx(burst["compute"]["memory_bound"].get<double>()));
  CHECK(on["compute"]["optimizer"].get<double>() == doctest::Approx(burst["compute"]["optimizer"].get<double>()));
  CHECK_FALSE(burst["power"].contains("limit_seconds"));
  // A prefill's GEMMs too: 4,096 tokens of Llama 3 8B are compute-bound; its memory time is unchanged.
  const std::vector<std::string> infer = {"time",     "llama-3-8b", "--mode", "infer",    "--hardware",
                                          "h100-sxm", "--seq",      "8192",   "--prompt", "4096"};
  std::vector<std::string> infer_off = infer;
  infer_off.push_back("--no-power-limit");
  const nlohmann::json prefill = testing::RunJson(infer)["time"], prefill_burst = testing::RunJson(infer_off)["time"];
  CHECK(prefill["prefill"]["power_limit_seconds"].get<double>() > 0);
  CHECK(prefill["prefill"]["compute_seconds"].get<double>() >
        prefill_burst["prefill"]["compute_seconds"].get<double>());
  CHECK(prefill["prefill"]["memory_seconds"].get<double>() ==
        doctest::Approx(prefill_burst["prefill"]["memory_seconds"].get<double>()));
  // Under --mfu nothing is priced by shape: the flag changes nothing, and a note says so.
  std::vector<std::string> mfu = off;
  mfu.insert(mfu.end(), {"--mfu", "0.4"});
  CHECK(testing::RunTally(mfu).err.find("--no-power-limit") != std::string::npos);
  std::vector<std::string> infer_mfu = infer_off;
  infer_mfu.insert(infer_mfu.end(), {"--mfu", "0.4"});
  CHECK(testing::RunTally(infer_mfu).err.find("--no-power-limit changes nothing") != std::string::npos);
}

}  // namespace
}  // namespace tally
