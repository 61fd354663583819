// Training time and inference roofline against published estimates and hand derivations.
#include "estimate/timing.h"

#include <doctest/doctest.h>

#include "config/hardware.h"
#include "estimate/flops.h"
#include "estimate/memory.h"
#include "estimate/params.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::ResolvedGraph;

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

TEST_CASE("time: past the K/V heads each rank computes its K/V replica in full") {
  // Multi-query attention (g = 1): d 64, 4 heads of 16, 32 tokens, no biases, tp = 2. The qkv
  // projection is 2 · 32 · 64 · (64 + 16 + 16) FLOPs; Q splits over both ranks, K and V do not:
  // per rank 2 · 32 · 64 · 64 / 2 + 2 · 32 · 64 · 32 = 131,072 + 131,072 (not 393,216 / 2).
  const std::string mqa =
      "family: transformer\nvocab_size: 100\ncontext_length: 32\nd_model: 64\nn_layers: 1\n"
      "n_heads: 4\nn_kv_heads: 1\nd_ff: 256\nbias: false\n";
  Settings s;
  s.mode = Mode::kInfer;
  s.seq = 32;
  s.gpus = s.tp = 2;
  const ModelSpec spec = LoadModelText("mqa.yaml", mqa);
  LayerGraph g = ResolvedGraph(spec, s);
  std::erase_if(g.layers, [](const Layer& l) { return !l.path.ends_with("attn.qkv"); });
  REQUIRE(g.layers.size() == 1);
  const Roofline r = ForwardRoofline(g, spec, s, {.peak = 1e12, .mfu = 1, .bandwidth = 1e12, .mbu = 1});
  CHECK(r.flops == 262'144.0);
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
    const uint64_t hardware = f.forward + f.backward + RecomputeFlops(g, Recompute::kFull);
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

TEST_CASE("roofline: one linear layer by hand") {
  // 1000 -> 1000, no bias, batch 1, bf16: 2e6 FLOPs; 2e6 B of weights + 2,000 B in + 2,000 B out.
  ModelSpec spec =
      LoadModelText("one.yaml", "family: sequential\ninput: [1000]\nlayers: [{linear: {out: 1000, bias: false}}]\n");
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  Roofline r = ForwardRoofline(ResolvedGraph(spec, s), spec, s, {.peak = 1e12, .mfu = 1, .bandwidth = 1e9, .mbu = 1});
  CHECK(r.flops == 2e6);
  CHECK(r.bytes == 2'004'000);
  CHECK(r.seconds == doctest::Approx(2'004'000 / 1e9).scale(0));  // memory-bound: 2.004 ms against 2 us of compute
  CHECK(r.compute_seconds == doctest::Approx(2e-6).scale(0));
}

TEST_CASE("roofline: a 13B decode step on A100-40GB is bandwidth-bound at about weights / bandwidth") {
  ModelSpec spec = ResolveModel("llama-2-13b");
  const HardwareSpec a100 = ResolveHardware("a100-40gb");
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  s.seq = 1;
  s.context = 128;
  Roofline r =
      ForwardRoofline(ResolvedGraph(spec, s), spec, s,
                      {.peak = *a100.Peak(GemmDType::kBf16), .mfu = 1, .bandwidth = a100.memory_bandwidth, .mbu = 1});
  const double weights = 2.0 * 13'015'864'320;  // fp16 weights, read once per step
  CHECK(r.memory_seconds > 20 * r.compute_seconds);
  // KV reads (2 · 40 · 40 · 128 · 2 B per token, 128 tokens) and activations add under 1%.
  CHECK(r.seconds / (weights / a100.memory_bandwidth) == doctest::Approx(1.0).epsilon(0.01));
}

TEST_CASE("roofline: tensor-parallel all-reduce per row-parallel linear") {
  // Llama-2-7B prefill of 8 tokens on tp = 2: 64 all-reduces (attention out and MLP down per block)
  // of 8 · 4096 · 2 bytes, each 2 · (2 - 1) / 2 of it over 100 GB/s.
  ModelSpec spec = ResolveModel("llama-2-7b");
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  s.seq = 8;
  s.gpus = s.tp = 2;
  Roofline r = ForwardRoofline(ResolvedGraph(spec, s), spec, s,
                               {.peak = 1e15, .mfu = 1, .bandwidth = 1e12, .mbu = 1, .interconnect = 100e9});
  CHECK(r.allreduce_seconds == doctest::Approx(64 * (8.0 * 4096 * 2) / 100e9).scale(0));
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

Roofline Decode(const std::string& model, uint64_t batch, uint64_t tp = 1) {
  ModelSpec spec = ResolveModel(model);
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  s.batch = s.micro_batch = batch;
  s.seq = 1;
  s.context = 128;
  s.gpus = s.tp = tp;
  return ForwardRoofline(ResolvedGraph(spec, s), spec, s,
                         {.peak = 1e18, .mfu = 1, .bandwidth = 1e12, .mbu = 1, .interconnect = 1e12});
}

TEST_CASE("roofline: a batch-1 decode step of a mixture of experts reads only the routed experts") {
  // Mixtral: one token runs 2 of 8 experts, so the step reads about the 12.88 B active parameters,
  // not all 46.7 B (bf16, 2 bytes each); KV and activations add under 1%.
  const double active = 12'879'925'248.0 * 2;
  CHECK(Decode("mixtral-8x7b", 1).bytes / active == doctest::Approx(1.0).epsilon(0.01));
}

TEST_CASE("roofline: a tied head reads the embedding matrix") {
  // GPT-2 small at batch 1 reads every weight once: 124,439,808 parameters at 2 bytes (the token
  // embedding through the tied head, the positions row by row, so the 786,432 position weights
  // are read for one row only). The KV cache of 128 tokens adds 128 · 36,864 B (1.9%).
  const double weights = 2.0 * (124'439'808 - 1024 * 768 + 768) + 128 * 36'864.0;
  CHECK(Decode("gpt2-small", 1).bytes / weights == doctest::Approx(1.0).epsilon(0.005));
}

}  // namespace
}  // namespace tally
