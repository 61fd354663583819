// The inference roofline against hand derivations.
#include "estimate/roofline.h"

#include <doctest/doctest.h>

#include "config/hardware.h"
#include "estimate/flops.h"
#include "estimate/memory.h"
#include "estimate/params.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::ResolvedGraph;

TEST_CASE("roofline: past the K/V heads each rank computes its K/V replica in full") {
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
  // of 8 · 4096 · 2 bytes, each 2 · (2 - 1) / 2 of it over the link, plus NCCL's latency (NVIDIA/nccl,
  // src/graph/tuning.cc): at 64 KiB its low-latency protocol wins, 3.6 us + 2 ring steps x 0.47 us at a
  // quarter of the 100 GB/s (Simple: 8.4 + 2 x 3.4 us at the whole of it).
  ModelSpec spec = ResolveModel("llama-2-7b");
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  s.seq = 8;
  s.gpus = s.tp = 2;
  Roofline r = ForwardRoofline(ResolvedGraph(spec, s), spec, s,
                               {.peak = 1e15, .mfu = 1, .bandwidth = 1e12, .mbu = 1, .interconnect = 100e9});
  const double bytes = 8.0 * 4096 * 2;
  const double low_latency = 3.6e-6 + 2 * 0.47e-6 + bytes / 25e9, simple = 8.4e-6 + 2 * 3.4e-6 + bytes / 100e9;
  REQUIRE(low_latency < simple);
  CHECK(r.allreduce_seconds == doctest::Approx(64 * low_latency).scale(0));
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

using testing::ResolvedGraph;

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
