// Training time from FLOPs and a throughput against published estimates and hand derivations.
#include "estimate/train_time.h"

#include <doctest/doctest.h>

#include "config/hardware.h"
#include "estimate/flops.h"
#include "estimate/memory.h"
#include "estimate/params.h"
#include "unit/test_util.h"

namespace tally {
namespace {

constexpr double kDay = 86400;

TEST_CASE("time: the lecture's 8 H100 for one week at MFU 1") {
  // 8 x 604,800 s x 989.5 TFLOP/s (bf16 dense, half the datasheet's 1,979 with sparsity).
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  REQUIRE(h100.Peak(GemmDType::kBf16).has_value());
  CHECK(*h100.Peak(GemmDType::kBf16) == 989.5e12);
  LayerGraph g = testing::PresetGraph("gpt2-small");
  FlopCounts f = CountFlops(g);
  const uint64_t step = f.forward + f.backward;
  TrainTime t = TrainingTime(step, step, 1024, 1, CountParams(g).total, CountParams(g).total, 989.5e12,
                             {.seconds = 7 * kDay, .gpus = 8, .mfu = 1.0}, 1);
  CHECK(t.model_flops == doctest::Approx(8 * 604'800.0 * 989.5e12).epsilon(1e-12));
  CHECK(t.model_flops == doctest::Approx(4.788e21).epsilon(1e-3));
}

TEST_CASE("time: nanoGPT's GPT-2 124M on 8 A100 at 30% MFU, 300B tokens, by 6·N·D") {
  // 6 · 124,439,808 · 300e9 / (8 · 312e12 · 0.3) = 299,134 s: about 3.5 days.
  LayerGraph g = testing::PresetGraph("gpt2-small");
  FlopCounts f = CountFlops(g);
  TrainTime t = TrainingTime(f.forward + f.backward, f.forward + f.backward, 1024, 1, CountParams(g).total,
                             CountParams(g).total, 312e12, {.tokens = 300e9, .gpus = 8, .mfu = 0.3}, 1);
  CHECK(t.six_nd_seconds / kDay == doctest::Approx(3.46).epsilon(0.005));
  // The exact count adds attention and the head: 854,438,400 FLOPs per token at seq 1024.
  CHECK(t.seconds == doctest::Approx(854'438'400.0 * 300e9 / (8 * 312e12 * 0.3)).epsilon(1e-9));
  CHECK(t.chinchilla_tokens == 20.0 * 124'439'808);
}

struct Megatron {
  const char* name;
  uint64_t h, layers, heads;
  double params, tokens, gpus, achieved, days;  // Narayanan et al. 2021, §5.1
};

TEST_CASE("time: Narayanan et al. 2021's training-time estimates (8·T·P / (n·X))") {
  // GPT-3 175B on 1024 A100 at 140 TFLOP/s for 300B tokens: about 34 days; the 1T model on 3072
  // A100 at 163 TFLOP/s for 450B tokens: about 84 days.
  const Megatron rows[] = {{"gpt3-175b", 12288, 96, 96, 175e9, 300e9, 1024, 140e12, 34},
                           {"gpt-1t", 25600, 128, 160, 1e12, 450e9, 3072, 163e12, 84}};
  for (const Megatron& m : rows) {
    CAPTURE(m.name);
    const uint64_t s = 2048, V = 51200, b = 1;
    LayerGraph g = testing::InlineGraph(
        "family: transformer\nvocab_size: 51200\ncontext_length: 2048\nd_model: " + std::to_string(m.h) +
            "\nn_layers: " + std::to_string(m.layers) + "\nn_heads: " + std::to_string(m.heads) +
            "\nd_ff: " + std::to_string(4 * m.h) + "\n",
        {.recompute = Recompute::kFull});
    FlopCounts f = CountFlops(g);
    const uint64_t hardware = f.forward + f.backward + RecomputeFlops(g, RecomputeRule(g, Recompute::kFull));
    // Their Eq. (App.): 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)), multiplied out.
    const uint64_t l = m.layers, h = m.h;
    CHECK(hardware == 96 * b * s * l * h * h + 16 * b * s * s * l * h + 6 * b * s * V * h);
    TrainTime t =
        TrainingTime(f.forward + f.backward, hardware, s, 1, CountParams(g).total, CountParams(g).total, 312e12,
                     {.tokens = m.tokens, .gpus = static_cast<uint64_t>(m.gpus), .achieved = m.achieved}, 1);
    const double approx = 8 * m.tokens * m.params / (m.gpus * m.achieved);
    CHECK(approx / kDay == doctest::Approx(m.days).epsilon(0.02));
    // The exact count is within a few percent of the 8TP rule (which drops the s/(6h) and V terms).
    CHECK(t.seconds / approx == doctest::Approx(1.0).epsilon(0.06));
  }
}

TEST_CASE("time: devices and tokens are solved for") {
  TrainTime gpus = TrainingTime(6'000, 6'000, 1, 1, 1'000, 1'000, 1e3, {.tokens = 1e3, .seconds = 1e3, .mfu = 1.0}, 1);
  CHECK(gpus.gpus == doctest::Approx(6.0));  // 6e6 FLOPs / (1e3 s · 1e3 FLOP/s)
  CHECK(gpus.gpus_needed == 6);
  TrainTime tokens = TrainingTime(6'000, 6'000, 1, 1, 1'000, 1'000, 1e3, {.seconds = 1e3, .gpus = 3, .mfu = 0.5}, 1);
  CHECK(tokens.tokens == doctest::Approx(250.0));  // 3 · 1e3 s · 500 FLOP/s / 6,000
  // Solved devices come in whole replicas: 6 devices at tp x pp = 4 is 2 replicas, 8 devices.
  TrainTime replicas =
      TrainingTime(6'000, 6'000, 1, 4, 1'000, 1'000, 1e3, {.tokens = 1e3, .seconds = 1e3, .mfu = 1.0}, 1);
  CHECK(replicas.gpus_needed == 8);
}

}  // namespace
}  // namespace tally
